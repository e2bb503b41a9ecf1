"""A tool call from the outside in and its answer back out: the envelopes it arrives
in, strict JSON, the errors every route answers with, and the answer serialised once.
Pure: no database here."""
