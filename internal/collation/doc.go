// Package collation owns string comparison by language rules: parsing and
// validating MongoDB's collation document ({locale, strength, caseLevel,
// caseFirst, numericOrdering, alternate, maxVariable, normalization,
// backwards}), the normalized spec MongoDB shows back (listCollections,
// listIndexes, explain), and a Collator that compares two strings and makes
// the collation key of one. It is built on golang.org/x/text/collate, the
// Unicode Collation Algorithm with CLDR's tailorings.
//
// {locale: "simple"} (or no collation) is the simple, binary collation: Parse
// returns a nil *Collator for it, and every user treats nil as bytewise
// comparison, so the common path costs one nil check.
//
// # Invariants
//
// "Keys order as Compare": for one Collator, bytes.Compare(Key(a), Key(b))
// has the sign of Compare(a, b), and the keys of strings Compare calls equal
// are equal. Indexes store keys (package index encodes them into keystring
// as strings), so an index scan returns strings in collation order and an
// equality bound finds every string equal under the collation. Checked by
// TestKeysOrderAsCompare over random strings.
//
// "One spec, one order": two collation documents that normalize to the same
// spec (Spec.Document) give Collators that order identically; Equal compares
// normalized specs, which is what the planner compares when it decides
// whether an index's collation matches a query's (MongoDB's rule).
//
// # Where x/text differs from ICU (MongoDB's collator)
//
//   - Versions: MongoDB 7.0 reports ICU's version "57.1" in every spec; Cairn
//     reports the same string so that specs round-trip through drivers and
//     mongorestore, but its order is CLDR's as x/text ships it (CLDR 23-era
//     root tables with per-locale tailorings), not ICU 57's. Orders of common
//     Latin, Greek and Cyrillic text agree; some scripts and rare characters
//     may order differently.
//   - Expansions: x/text weighs "ß" apart from "ss" at the secondary level,
//     so at strength 2 "Straße" and "STRASSE" differ; ICU tells them apart
//     only at the tertiary level.
//   - Locales: MongoDB's documented list is accepted; where x/text has no
//     tailoring for a locale it uses the root order, as ICU does for a locale
//     without tailoring. Locale variants ("de@collation=phonebook") are
//     refused (InvalidOptions), since x/text implements few of them.
//   - caseFirst: x/text has no such option. "upper" is implemented by
//     swapping the case of each letter before comparing (x/text's tertiary
//     order puts lower case first, so swapping puts upper case first, and
//     primary and secondary weights do not depend on case); "lower" is
//     x/text's own order, as "off" is. Letters whose case mapping is not one
//     rune to one rune keep their case.
//   - caseLevel: x/text turns it into a comparison of the whole tertiary
//     level, so at strength 1 or 2 with caseLevel on, diacritics and other
//     tertiary differences count as well as case ("é" and "e" differ; ICU
//     calls them equal).
//   - alternate "shifted": x/text's Compare skips the primary level then
//     (an unfinished part of it), so Collator compares keys instead, which
//     x/text builds correctly.
//   - maxVariable: x/text's variable top is CLDR's default, punctuation
//     ("punct"); "space" changes nothing unless alternate is "shifted", and
//     that combination is refused (InvalidOptions).
//   - normalization: x/text always compares the canonical decomposition, so
//     normalization true and false order alike (ICU with false skips the
//     check and may order unnormalized text differently).
//   - Per-locale defaults: ICU gives some locales other defaults (caseFirst
//     "upper" for Danish, backwards for fr_CA); Cairn's spec shows and uses
//     the defaults of the root locale unless the document sets them.
package collation
