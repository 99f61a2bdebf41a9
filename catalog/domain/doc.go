// Package domain describes the public domains of a table's columns.
//
// Differentially private synthesis works on discrete, finite attributes whose
// sets of possible values are PUBLIC: they come from the schema (ENUM,
// BOOLEAN, CHECK constraints), from the data owner's declarations
// (ALTER TABLE … SET DOMAIN) or from an import's domain file, and never from
// the data. A Column maps every value to a code in [0, Size()) and back.
//
// There are three kinds of column:
//
//   - Categorical: an explicit, ordered list of values (ENUM values, CHECK
//     (c IN (…)), SET DOMAIN c IN (…)). Codes follow the list order.
//   - IntRange: the integers lo..hi (BOOLEAN is 0..1; CHECK (c BETWEEN lo
//     AND hi) or c >= lo AND c <= hi; a domain file's size n is 0..n-1).
//     Code = value - lo.
//   - Binned: SET DOMAIN c BETWEEN lo AND hi BINS n: n equal-width bins;
//     bin i is [lo + i·w, lo + (i+1)·w) with w = (hi-lo)/n, and the last bin
//     also contains hi. Decoding a bin for a synthetic row draws a value
//     uniformly within the bin; for integer columns it draws an integer
//     uniformly among the integers of the bin (every bin of an integer
//     column is at least 1 wide, so it holds one).
//
// When the column is nullable, NULL is one extra value with the last code,
// Size()-1.
//
// # Out-of-domain values
//
// Encode never widens a domain and never drops a value; it maps every value
// to a code and reports what it did:
//
//   - Ordered domains (IntRange, Binned) clip: a value below the range gets
//     the first code, one above gets the last non-NULL code (Clipped). A
//     non-integral value of an IntRange column is rounded to the nearest
//     integer first.
//   - Categorical domains map a value that is not in the list to NULL when
//     the column is nullable (ToNull), and otherwise to the first value of
//     the list, code 0 (Clipped).
//   - NULL in a column that is not nullable gets code 0 (Clipped).
//   - A value that cannot be interpreted in the column's type at all (a
//     string that is not a number for a numeric column, NaN, a date) yields
//     code -1 and status Invalid; the caller must reject the row loudly.
//
// The package is pure: it knows nothing about storage. Tables serialise to
// JSON for the catalog.
package domain
