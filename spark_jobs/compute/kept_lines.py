"""The python engine's parsed lines, kept in each run for the next: a file an earlier run parsed is
not parsed again.

Stage 1 (``events.parsed_line``) takes each line on its own: what it gives depends on the line's
text, its input position (the file's index in the run's list, the line's number), the stores the
topology names and the code. A run keeps each file's parsed lines, pickled, in its ``_state/parsed/``, named by all of
these (the file by its path as given and a digest of its bytes: ingest writes its ``events/``
folder anew each run, the files it leaves as they were included). The next run loads the pickles
of the files whose bytes it finds unchanged, links them into its own state, and parses the rest:
after an incremental ingest, the few files of the blocks and folders the new exports reach. The rules between lines then run over the whole log as in any full run, so the run
equals the replay by construction. A run that fails is abandoned with its state; the published run
keeps its own, and a pruned run's pickles live on in the runs that link them.

Stage 1 is most of reading a log: 1.8 of the 2.1 CPU s the 12-server share's log (172,238 lines)
takes to read; its pickles load in 0.2.
"""

from __future__ import annotations

import hashlib
import io
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pfscope.spark_jobs.compute.state import code_version
from pfscope.spark_jobs.model.events import Event, Parsed, lines_of, make_seq, parsed_line
from pfscope.spark_jobs.model.topology import Topology
from pfscope.spark_jobs.runtime.kept import dump_kept, link_or_copy, load_kept, pickle_name

#: a run's parsed lines, a pickle per file
PARSED = "_state/parsed"

#: one parsed line as kept: its number, its text ("" when not UTF-8), its event or reject reason
Kept = tuple[int, str, "Event | str"]


@dataclass
class KeptLines:
    """The lines of a run's files, parsed or as the earlier run (``earlier``) parsed them."""

    topo: Topology
    run_dir: Path
    earlier: Path | None
    #: files whose lines were loaded from the earlier run, and files parsed now
    kept: int = 0
    parsed: int = 0
    #: lines read, by the file's index in the run's list (for the manifest), and those parsed now
    file_lines: Counter[int] = field(default_factory=Counter)
    lines_parsed: int = 0
    #: each event's line, by its input position (what ``kept_folds`` knows an event by)
    texts: dict[int, str] = field(default_factory=dict)

    def lines(self, files: list[str]) -> Iterator[Parsed]:
        """Every line of ``files`` after stage 1, in input order."""
        # stage 1 reads of the topology only which stores it names (an hour's topology often gains a
        # folder or a replica: the lines stay as parsed)
        stores = ",".join(sorted(self.topo.stores))
        options = f"{stores}\0{code_version()}\0{sys.version}"
        for index, f in enumerate(files):
            got = self._file(f, index, options)
            self.file_lines[index] += len(got)
            texts = self.texts
            for line_no, text, event in got:
                if type(event) is Event:
                    texts[event.seq] = text
                yield f, line_no, text, event

    def _file(self, f: str, index: int, options: str) -> list[Kept]:
        data = Path(f).read_bytes()  # parsed from the bytes its key is taken of
        key = hashlib.blake2b(data, digest_size=16).hexdigest()
        about = {"source": f, "key": key, "index": str(index), "options": options}
        name = pickle_name(*about.values())
        here = self.run_dir / PARSED / name
        if self.earlier is not None:
            there = self.earlier / PARSED / name
            got = load_kept(there, about, _is_kept)
            if got is not None:
                link_or_copy(there, here)
                self.kept += 1
                return got
        got = [
            (n, *parsed_line(text, self.topo, make_seq(index, n))) for n, text in lines_of(io.BytesIO(data))
        ]
        self.parsed += 1
        self.lines_parsed += len(got)
        dump_kept(here, about, got)
        return got

    def line(self, files: int) -> str:
        """What the run took from the earlier one, for its first line ("" if nothing)."""
        if not self.kept:
            return ""
        return f"; the lines of {self.kept:,} of {files:,} files as the previous run parsed them"


def _is_kept(x: Any) -> bool:
    return (
        type(x) is tuple
        and len(x) == 3
        and type(x[0]) is int
        and type(x[1]) is str
        and (type(x[2]) is Event or type(x[2]) is str)
    )
