"""How a search query's text matches (``--search-mode``), and the default.

* ``phrase`` — upstream's rule: the query's tokens contiguous and in order, exact.
* ``words`` — its words in any order, each by its English stem, identifiers whole or by
  their parts; all of them, else any; the exact phrase ranked first
  (``indexer.store.tantivy.words``).

The default is the mode that measures best on the retrieval set
(``bench/bench_relevance.py``); ``phrase`` stays available, and the conformance of the
upstream contract runs in it. Standard library only: the command line's parser lists
the choices without loading the search.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

SearchMode = Literal["phrase", "words"]
SEARCH_MODES: Final[tuple[SearchMode, ...]] = get_args(SearchMode)
DEFAULT_SEARCH_MODE: Final[SearchMode] = "words"
