"""Stop-word lists per language, keyed by PyStemmer algorithm name.

Every word is already in the analyzer's form (NFKC, then casefold), so a list is
matched against tokens without further normalization. No list except English holds
a negation (``nem``, ``niet``, ``не``, ``ні``, ...): dropping one would make
"battery does not charge" and "battery charges" index alike.

Where the Snowball project publishes a list (hungarian, dutch, russian, german,
french, spanish, italian; snowballstem.org/algorithms/<language>/stop.txt, BSD-3,
the same lists PostgreSQL ships as ``tsearch_data/<language>.stop``) it is
reproduced with these changes:

* negations removed: hu ``nem ne nincs sem semmi``, nl ``niet geen niets``,
  ru ``не нет ни ничего никогда нельзя``, de ``nicht nichts kein keine keinem keinen
  keiner keines``, fr ``ne pas n``, es ``no ni nada``, it ``non``;
* content words removed: hu ``cikk cikkek cikkeket keressünk`` ("article(s)",
  "let's search": web-page boilerplate in Snowball's corpus, but "cikk" is also the
  article of a law), es ``sintiendo sentido sentida sentidos sentidas siente sentid``
  (forms of *sentir*; "sentido" is "sense, meaning");
* es typos ``vosostros vosostras`` spelled ``vosotros vosotras``; hu ``ill.`` dropped
  (the tokenizer never yields a dot; ``ill`` stays); de ``daß`` casefolded to ``dass``.

Czech, slovak, polish and ukrainian have no Snowball list; theirs are short,
hand-written lists of the most frequent function words only: personal, possessive,
demonstrative and relative pronouns, prepositions, conjunctions, particles and the
forms of "to be". They hold no noun, adjective or content verb.
"""

from __future__ import annotations

# Snowball English stop-word list (snowballstem.org/algorithms/english/stop.txt), with
# contractions split the way the tokenizer splits them.
ENGLISH = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which
    who whom this that these those am is are was were be been being have has had having do
    does did doing would should could ought a an the and but if or because as until while
    of at by for with about against between into through during before after above below
    to from up down in out on off over under again further then once here there when where
    why how all any both each few more most other some such no nor not only own same so
    than too very s t can will just don shouldn now d ll m o re ve y ain aren couldn didn
    doesn hadn hasn haven isn ma mightn mustn needn shan wasn weren won wouldn also
    """.split()
)

HUNGARIAN = frozenset(
    """
    a ahogy ahol aki akik akkor alatt által általában amely amelyek amelyekben amelyeket
    amelyet amelynek ami amit amolyan amíg amikor át abban ahhoz annak arra arról az
    azok azon azt azzal azért aztán azután azonban bár be belül benne csak de e eddig
    egész egy egyes egyetlen egyéb egyik egyre ekkor el elég ellen elő először előtt
    első én éppen ebben ehhez emilyen ennek erre ez ezt ezek ezen ezzel ezért és fel
    felé hanem hiszen hogy hogyan igen így illetve ill ilyen ilyenkor ison ismét itt jó
    jól jobban kell kellett keresztül ki kívül között közül legalább lehet lehetett
    legyen lenne lenni lesz lett maga magát majd már más másik meg még mellett mert mely
    melyek mi mit míg miért milyen mikor minden mindent mindenki mindig mint mintha
    mivel most nagy nagyobb nagyon néha nekem neki néhány nélkül olyan ott össze ő ők
    őket pedig persze rá s saját sok sokat sokkal számára szemben szerint szinte talán
    tehát teljes tovább továbbá több úgy ugyanis új újabb újra után utána utolsó vagy
    vagyis valaki valami valamint való vagyok van vannak volt voltam voltak voltunk
    vissza vele viszont volna
    """.split()
)

DUTCH = frozenset(
    """
    de en van ik te dat die in een hij het zijn is was op aan met als voor had er maar
    om hem dan zou of wat mijn men dit zo door over ze zich bij ook tot je mij uit der
    daar haar naar heb hoe heeft hebben deze u want nog zal me zij nu ge omdat iets
    worden toch al waren veel meer doen toen moet ben zonder kan hun dus alles onder ja
    eens hier wie werd altijd doch wordt wezen kunnen ons zelf tegen na reeds wil kon uw
    iemand geweest andere
    """.split()
)

RUSSIAN = frozenset(
    """
    и в во что он на я с со как а то все она так его но да ты к у же вы за бы по только
    ее мне было вот от меня еще о из ему теперь когда даже ну вдруг ли если уже или быть
    был него до вас нибудь опять уж вам ведь там потом себя ей может они тут где есть
    надо ней для мы тебя их чем была сам чтоб без будто чего раз тоже себе под будет ж
    тогда кто этот того потому этого какой совсем ним здесь этом один почти мой тем
    чтобы нее сейчас были куда зачем всех можно при наконец два об другой хоть после над
    больше тот через эти нас про всего них какая много разве три эту моя впрочем хорошо
    свою этой перед иногда лучше чуть том такой им более всегда конечно всю между
    """.split()
)

GERMAN = frozenset(
    """
    aber alle allem allen aller alles als also am an ander andere anderem anderen
    anderer anderes anderm andern anderr anders auch auf aus bei bin bis bist da damit
    dann der den des dem die das dass derselbe derselben denselben desselben demselben
    dieselbe dieselben dasselbe dazu dein deine deinem deinen deiner deines denn derer
    dessen dich dir du dies diese diesem diesen dieser dieses doch dort durch ein eine
    einem einen einer eines einig einige einigem einigen einiger einiges einmal er ihn
    ihm es etwas euer eure eurem euren eurer eures für gegen gewesen hab habe haben hat
    hatte hatten hier hin hinter ich mich mir ihr ihre ihrem ihren ihrer ihres euch im
    in indem ins ist jede jedem jeden jeder jedes jene jenem jenen jener jenes jetzt
    kann können könnte machen man manche manchem manchen mancher manches mein meine
    meinem meinen meiner meines mit muss musste nach noch nun nur ob oder ohne sehr sein
    seine seinem seinen seiner seines selbst sich sie ihnen sind so solche solchem
    solchen solcher solches soll sollte sondern sonst über um und uns unse unsem unsen
    unser unses unter viel vom von vor während war waren warst was weg weil weiter
    welche welchem welchen welcher welches wenn werde werden wie wieder will wir wird
    wirst wo wollen wollte würde würden zu zum zur zwar zwischen
    """.split()
)

FRENCH = frozenset(
    """
    au aux avec ce ces dans de des du elle en et eux il je la le leur lui ma mais me
    même mes moi mon nos notre nous on ou par pour qu que qui sa se ses son sur ta te
    tes toi ton tu un une vos votre vous c d j l à m s t y été étée étées étés étant
    étante étants étantes suis es est sommes êtes sont serai seras sera serons serez
    seront serais serait serions seriez seraient étais était étions étiez étaient fus
    fut fûmes fûtes furent sois soit soyons soyez soient fusse fusses fût fussions
    fussiez fussent ayant ayante ayantes ayants eu eue eues eus ai as avons avez ont
    aurai auras aura aurons aurez auront aurais aurait aurions auriez auraient avais
    avait avions aviez avaient eut eûmes eûtes eurent aie aies ait ayons ayez aient
    eusse eusses eût eussions eussiez eussent
    """.split()
)

SPANISH = frozenset(
    """
    de la que el en y a los del se las por un para con una su al lo como más pero sus le
    ya o este sí porque esta entre cuando muy sin sobre también me hasta hay donde quien
    desde todo nos durante todos uno les contra otros ese eso ante ellos e esto mí antes
    algunos qué unos yo otro otras otra él tanto esa estos mucho quienes muchos cual
    poco ella estar estas algunas algo nosotros mi mis tú te ti tu tus ellas nosotras os
    mío mía míos mías tuyo tuya tuyos tuyas suyo suya suyos suyas nuestro nuestra
    nuestros nuestras vuestro vuestra vuestros vuestras esos esas estoy estás está
    estamos estáis están esté estés estemos estéis estén estaré estarás estará estaremos
    estaréis estarán estaría estarías estaríamos estaríais estarían estaba estabas
    estábamos estabais estaban estuve estuviste estuvo estuvimos estuvisteis estuvieron
    estuviera estuvieras estuviéramos estuvierais estuvieran estuviese estuvieses
    estuviésemos estuvieseis estuviesen estando estado estada estados estadas estad he
    has ha hemos habéis han haya hayas hayamos hayáis hayan habré habrás habrá habremos
    habréis habrán habría habrías habríamos habríais habrían había habías habíamos
    habíais habían hube hubiste hubo hubimos hubisteis hubieron hubiera hubieras
    hubiéramos hubierais hubieran hubiese hubieses hubiésemos hubieseis hubiesen
    habiendo habido habida habidos habidas soy eres es somos sois son sea seas seamos
    seáis sean seré serás será seremos seréis serán sería serías seríamos seríais serían
    era eras éramos erais eran fui fuiste fue fuimos fuisteis fueron fuera fueras
    fuéramos fuerais fueran fuese fueses fuésemos fueseis fuesen tengo tienes tiene
    tenemos tenéis tienen tenga tengas tengamos tengáis tengan tendré tendrás tendrá
    tendremos tendréis tendrán tendría tendrías tendríamos tendríais tendrían tenía
    tenías teníamos teníais tenían tuve tuviste tuvo tuvimos tuvisteis tuvieron tuviera
    tuvieras tuviéramos tuvierais tuvieran tuviese tuvieses tuviésemos tuvieseis
    tuviesen teniendo tenido tenida tenidos tenidas tened vosotros vosotras
    """.split()
)

ITALIAN = frozenset(
    """
    ad al allo ai agli all agl alla alle con col coi da dal dallo dai dagli dall dagl
    dalla dalle di del dello dei degli dell degl della delle in nel nello nei negli nell
    negl nella nelle su sul sullo sui sugli sull sugl sulla sulle per tra contro io tu
    lui lei noi voi loro mio mia miei mie tuo tua tuoi tue suo sua suoi sue nostro
    nostra nostri nostre vostro vostra vostri vostre mi ti ci vi lo la li le gli ne il
    un uno una ma ed se perché anche come dov dove che chi cui più quale quanto quanti
    quanta quante quello quelli quella quelle questo questi questa queste si tutto tutti
    a c e i l o ho hai ha abbiamo avete hanno abbia abbiate abbiano avrò avrai avrà
    avremo avrete avranno avrei avresti avrebbe avremmo avreste avrebbero avevo avevi
    aveva avevamo avevate avevano ebbi avesti ebbe avemmo aveste ebbero avessi avesse
    avessimo avessero avendo avuto avuta avuti avute sono sei è siamo siete sia siate
    siano sarò sarai sarà saremo sarete saranno sarei saresti sarebbe saremmo sareste
    sarebbero ero eri era eravamo eravate erano fui fosti fu fummo foste furono fossi
    fosse fossimo fossero essendo faccio fai facciamo fanno faccia facciate facciano
    farò farai farà faremo farete faranno farei faresti farebbe faremmo fareste
    farebbero facevo facevi faceva facevamo facevate facevano feci facesti fece facemmo
    faceste fecero facessi facesse facessimo facessero facendo sto stai sta stiamo
    stanno stia stiate stiano starò starai starà staremo starete staranno starei
    staresti starebbe staremmo stareste starebbero stavo stavi stava stavamo stavate
    stavano stetti stesti stette stemmo steste stettero stessi stesse stessimo stessero
    stando
    """.split()
)

CZECH = frozenset(
    """
    já mě mne mi mnou ty tě tebe ti tobě tebou on ona ono oni ony jeho jej jemu ji jí
    jim jich něj něho němu ní nich nim nimi ně my nás nám námi vy vás vám vámi se si
    sebe sobě sebou můj moje mé mého mému mým mých tvůj tvoje tvé svůj svoje svá své
    svého svému svým svých náš naše našeho naším našich našim váš vaše vašeho vašich
    její jejich ten ta to ty toho tomu tom tím těch těm tu tou té tento tato toto tyto
    tuto tohoto tomto této který která které kterého kterému kterým kterých kteří kterou
    co což čeho čemu čím kdo koho komu kým jenž jež jaký jaká jaké jakou a i ale nebo
    aby že když pokud protože jako jak až než tedy proto pak však také tak či již už
    ještě jen jenom pouze snad asi tam zde kde kdy v ve na do z ze s k ke o od po pro
    při za před pod nad mezi přes u bez kromě podle proti během vůči být jsem jsi je
    jsme jste jsou byl byla bylo byli byly bude budou budu budeš budeme budete by bych
    bychom byste
    """.split()
)

SLOVAK = frozenset(
    """
    ja ma mňa mi mne mnou ty ťa teba ti tebe tebou on ona ono oni ony jeho ho jemu mu
    ju jej ňom ňou neho nemu nej nich nim nimi ich im my nás nám nami vy vás vám vami
    sa si seba sebe sebou môj moja moje môjho mojej mojich tvoj tvoja tvoje svoj
    svoja svoje svojho svojej svojich svojim svojou náš naša naše nášho našej našich
    naším váš vaša vaše vášho vašej vašich ten tá to tí tie toho tomu tom tým tých
    tými tú tou tej tento táto toto tieto tohto tomto tejto ktorý ktorá ktoré ktorého
    ktorému ktorej ktorí ktorých ktorým ktorou ktorými čo čoho čomu čím kto koho komu
    kým aký aká aké akú a i aj ale alebo aby že keď ak pretože lebo ako než teda preto
    potom však tiež tak či už ešte len iba asi tu tam kde kedy v vo na do z zo s so k
    ku o od odo po pre pri za pred pod nad medzi cez u bez okrem podľa proti počas
    voči byť som si je sme ste sú bol bola bolo boli bude budú budem budeš budeme
    budete by
    """.split()
)

POLISH = frozenset(
    """
    ja mnie mi mną ty ciebie cię tobie ci tobą on ona ono oni one jego go jemu mu
    niego niemu nim nią ją jej niej ich im nich nimi je my nas nam nami wy was wam
    wami się siebie sobie sobą mój moja moje mojego mojej moich moim twój twoja twoje
    twojego twojej swój swoja swoje swojego swojej swoich swoim swoją nasz nasza
    nasze naszego naszej naszych naszym wasz wasza wasze waszego waszej waszych ten
    ta to te tego temu tym tych tą tę tej tymi tamten tamta tamto który która które
    którego której któremu którym których którzy którą którymi co czego czemu czym
    kto kogo komu kim jaki jaka jakie i a oraz albo lub ale lecz jednak że aby żeby
    gdy kiedy jeśli jeżeli ponieważ bo niż czy więc zatem także też również tak jak
    już jeszcze tylko tu tutaj tam gdzie właśnie w we na do z ze od ode po przy za
    przed pod nad między przez u o dla bez oprócz według przeciw wobec podczas ku być
    jestem jesteś jest jesteśmy jesteście są był była było byli były będzie będą będę
    będziesz będziemy będziecie by bym byś
    """.split()
)

UKRAINIAN = frozenset(
    """
    я мене мені мною ти тебе тобі тобою він вона воно вони його йому ним ньому нього
    її їй нею неї ній їх їм ними них ми нас нам нами ви вас вам вами себе собі собою
    мій моя моє мої мого моєї моїх моєму моїм свій своя своє свої свого своєї своїх
    своєму своїм своєю наш наша наше наші нашого нашої наших нашому нашим ваш ваша
    ваше ваші вашого вашої ваших їхній їхня їхнє їхні їхнього їхньої цей ця це ці
    цього цієї цих цьому цим цією той та те ті того тієї тих тому тим тією який яка
    яке які якого якої яких якому яким якою якими що чого чому чим хто кого кому ким
    і й а але або чи щоб якщо бо ніж адже проте однак тобто також теж так як коли де
    вже ще лише тільки саме навіть тут там ось ж же в у на до з із зі від по при за
    перед під над між через о об про для без біля після крізь серед щодо бути є був
    була було були буде будуть буду будеш будемо будете б би
    """.split()
)

STOPWORDS: dict[str, frozenset[str]] = {
    "english": ENGLISH,
    "hungarian": HUNGARIAN,
    "czech": CZECH,
    "slovak": SLOVAK,
    "polish": POLISH,
    "ukrainian": UKRAINIAN,
    "russian": RUSSIAN,
    "dutch": DUTCH,
    "german": GERMAN,
    "french": FRENCH,
    "spanish": SPANISH,
    "italian": ITALIAN,
}
"""Stop words per PyStemmer algorithm name; ``ukrainian`` has no Snowball stemmer
(see :mod:`ragline.analysis.ukrainian`), nor has ``slovak``."""
