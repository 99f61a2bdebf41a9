// Package census generates a deterministic, census-like table of people for
// dpsql's demo database.
//
// The rows come from a small hand-written Bayesian network: age drives
// education and marital status; education drives workclass and occupation;
// sex, age, occupation and workclass drive weekly hours; and income depends
// on education, age, marital status, occupation, hours, sex and capital
// gain. The same seed always yields the same rows: the generator uses only
// PCG (math/rand/v2, whose output is fixed) and integer and float arithmetic,
// no library functions whose last bit may vary between platforms.
//
// It is demo data, not a privacy mechanism: nothing here is released noise.
package census
