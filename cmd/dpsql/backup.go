package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// runBackup copies the data file of a running server over the MySQL
// protocol (BACKUP DPSQL, superusers only) into a file, which it checks
// like dpsql check before putting it in place.
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	client := declareClientFlags(fs, "user name (needs the SUPER privilege, as root has)")
	out := fs.String("out", "", "file to write the copy to (replaced atomically once the copy is checked)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *out == "" {
		fmt.Fprintln(stderr, "backup needs --out FILE")
		return errUsage
	}
	start := time.Now()
	conn, err := client.connect(ctx, false)
	if err != nil {
		return err
	}
	defer conn.Close()

	// The copy goes to a temporary file beside the target, so that the
	// rename is atomic and a failed backup never replaces a good one.
	dest, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".tmp-*")
	if err != nil {
		return fmt.Errorf("creating the copy beside %s: %w", dest, err)
	}
	tmpName := tmp.Name()
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	size, err := fetchBackup(ctx, conn, tmp)
	if err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", tmpName, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", tmpName, err)
	}
	rep, err := checkDataFile(tmpName)
	if err != nil {
		return fmt.Errorf("checking the copy: %w", err)
	}
	if !rep.ok() {
		rep.print(stderr)
		return fmt.Errorf("the copy received from %s fails its check (%s); nothing was written to %s", *client.addr, rep.summary(), dest)
	}
	if err := os.Rename(tmpName, dest); err != nil {
		return fmt.Errorf("putting the copy in place: %w", err)
	}
	keep = true
	if d, err := os.Open(filepath.Dir(dest)); err == nil { // make the rename durable
		d.Sync()
		d.Close()
	}
	fmt.Fprintf(stdout, "backed up %s to %s: %d bytes in %v, checked: %s\n",
		*client.addr, dest, size, time.Since(start).Round(time.Millisecond), rep.summary())
	return nil
}

// fetchBackup runs BACKUP DPSQL on conn and writes the chunks it returns,
// which must be contiguous, to w.
func fetchBackup(ctx context.Context, conn *sql.DB, w io.Writer) (int64, error) {
	rows, err := conn.QueryContext(ctx, "BACKUP DPSQL")
	if err != nil {
		return 0, fmt.Errorf("BACKUP DPSQL: %w", err)
	}
	defer rows.Close()
	var (
		n      int64
		offset int64
		data   []byte
	)
	for rows.Next() {
		if err := rows.Scan(&offset, &data); err != nil {
			return n, fmt.Errorf("BACKUP DPSQL: %w", err)
		}
		if offset != n {
			return n, fmt.Errorf("BACKUP DPSQL: chunk at byte %d, expected byte %d", offset, n)
		}
		if _, err := w.Write(data); err != nil {
			return n, fmt.Errorf("writing the copy: %w", err)
		}
		n += int64(len(data))
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("BACKUP DPSQL (after %d bytes): %w", n, err)
	}
	if n == 0 {
		return 0, errors.New("BACKUP DPSQL returned nothing")
	}
	return n, nil
}
