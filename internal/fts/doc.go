// Package fts is text search's language: how a string becomes terms
// (tokenizing, case and diacritic folding, stop words, Snowball stemming),
// how a text index reads a document (Spec: weights, wildcard, default
// language, language override) and scores its terms, and what a $text
// search means (ParseQuery: terms, negated terms, phrases, negated
// phrases; Query.Matches). It follows MongoDB 7.0's text index version 3;
// index keys are made by internal/index and scanned by internal/planner.
//
// # Invariants
//
//   - Terms agree: the terms Spec.Scores gives a document are exactly the
//     terms Query.BoundsTerms would give the same words, so a scan of the
//     query's terms finds every document containing one of them.
//   - Scores are MongoDB's: per string, the n-th occurrence of a term adds
//     weight/2^(n-1); the sum is scaled by 0.5 + 0.5·count/terms and by 1.1
//     when the term is the whole string; a document's term scores over its
//     strings add up; a query's score is the sum over its terms.
//
// # Deviations from MongoDB
//
// Stop word lists are Cairn's own (stopwords/*.txt, short lists of each
// language's commonest function words), not MongoDB's files, so a few
// words that MongoDB ignores are indexed here and the other way round.
// Words are separated as MongoDB's version 3 tokenizer separates them:
// at characters with the Unicode properties White_Space, Dash, Hyphen,
// Quotation_Mark, Terminal_Punctuation, Pattern_Syntax or
// Sentence_Terminal, except the apostrophe in English; Go's Unicode tables
// are a newer Unicode version than MongoDB's generated list, so a few
// recently added characters may differ. A word is lower-cased (Turkish's
// dotted and dotless i in Turkish), checked against the stop words,
// stemmed with its diacritics, then stripped of them (canonical
// decomposition, nonspacing marks dropped) — MongoDB's order; its own case
// folding and diacritic tables may differ from Go's on rare characters.
// Stems come from the Snowball project's Go stemmers, generated from the
// same algorithms as the C libstemmer MongoDB links.
package fts
