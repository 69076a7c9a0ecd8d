// Package advise owns the data-model advisor: it reads a bounded sample of
// a collection's documents, its indexes with their use, and the query
// shapes the server saw, and reports the modelling mistakes the design
// documents' teams found in production — each a Finding with its evidence,
// a severity and a concrete change.
//
// It does no I/O: the caller (the advise command, with the query shapes the
// server samples in commands.QueryShapes) hands it an Input taken from one
// snapshot, so analysis never blocks writers and is tested on
// plain documents. Each detector is one function over the Input, listed in
// detectors; a new kind of advice is one more entry.
//
// # Invariants
//
// "Evidence with every finding": a Finding names the path or index it is
// about, carries the counts that triggered it (how many sampled documents,
// how many matched) and says what to change. TestModels checks each
// design document's "before" model yields the finding and suggestion its
// team arrived at, and that a clean model yields none.
//
// "Bounded": Analyze's work is linear in the sample (documents, keys
// visited) with per-path bookkeeping capped (maxNamesPerPath distinct field
// names, maxValuesPerField distinct values), so an advise of any collection
// costs what its sample costs.
package advise
