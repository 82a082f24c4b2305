"""Types, errors and protocols shared by every stage. Imports nothing heavy."""
