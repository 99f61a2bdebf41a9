// Package format1 holds a data file written by the last dpsql of catalog
// format 1 (ledger format "1"), and what its queries returned then, for
// the migration tests of the catalog, the ledger and the server. Only
// tests import it.
package format1

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
)

//go:embed dpsql.db.gz
var compressed []byte

// Golden is a JSON object mapping "user: query" to the rows the format-1
// server returned.
//
//go:embed golden.json
var Golden []byte

// File returns the format-1 data file (dpsql.db).
func File() ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(compressed))
	if err != nil {
		return nil, fmt.Errorf("format1: %w", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("format1: %w", err)
	}
	return b, nil
}
