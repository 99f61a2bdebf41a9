package catalog

import (
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentSessions runs writers and readers through the engine at the
// same time (run with -race). Writers insert disjoint keys, plus one
// contended primary key and one contended unique key each round; exactly one
// insert of each contended key may win.
func TestConcurrentSessions(t *testing.T) {
	s := mustOpen(t, "")
	h := newHarness(t, s)
	h.mustExec("", "CREATE DATABASE d")
	h.mustExec("d", "CREATE TABLE t (id INT PRIMARY KEY, w INT)")
	h.mustExec("d", "CREATE TABLE a (id INT PRIMARY KEY AUTO_INCREMENT, w INT)")
	h.mustExec("d", "CREATE TABLE u (id INT PRIMARY KEY AUTO_INCREMENT, email VARCHAR(20), UNIQUE KEY (email))")
	const writers, perWriter = 8, 25
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := map[int]int{}
	uwins := map[int]int{}
	errs := make(chan error, writers*perWriter*3)
	for w := range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				id := 1000 + w*perWriter + i
				if _, err := h.query("d", fmt.Sprintf("INSERT INTO t VALUES (%d, %d)", id, w)); err != nil {
					errs <- err
				}
				if _, err := h.query("d", fmt.Sprintf("INSERT INTO a (w) VALUES (%d)", w)); err != nil {
					errs <- err
				}
				if _, err := h.query("d", fmt.Sprintf("INSERT INTO t VALUES (%d, %d)", i, w)); err == nil {
					mu.Lock()
					wins[i]++
					mu.Unlock()
				}
				// Contended unique secondary key: distinct primary keys, same email.
				if _, err := h.query("d", fmt.Sprintf("INSERT INTO u (email) VALUES ('e%d')", i)); err == nil {
					mu.Lock()
					uwins[i]++
					mu.Unlock()
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range perWriter {
				if _, err := h.query("d", "SELECT COUNT(*), SUM(w) FROM t"); err != nil {
					errs <- err
				}
				if _, err := h.query("d", "SELECT w FROM t WHERE id = 1000"); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range perWriter {
		if wins[i] != 1 {
			t.Errorf("contended key %d inserted %d times", i, wins[i])
		}
		if uwins[i] != 1 {
			t.Errorf("contended unique email e%d inserted %d times", i, uwins[i])
		}
	}
	if got := normValue(h.mustExec("d", "SELECT COUNT(*) FROM u")[0][0]); got != fmt.Sprint(perWriter) {
		t.Errorf("u has %s rows, want %d", got, perWriter)
	}
	want := fmt.Sprint(writers*perWriter + perWriter)
	if got := normValue(h.mustExec("d", "SELECT COUNT(*) FROM t")[0][0]); got != want {
		t.Errorf("t has %s rows, want %s", got, want)
	}
	// Auto-increment values are distinct and dense: COUNT(DISTINCT id) = MAX(id).
	r := h.mustExec("d", "SELECT COUNT(*), COUNT(DISTINCT id), MAX(id) FROM a")[0]
	n := fmt.Sprint(writers * perWriter)
	if normValue(r[0]) != n || normValue(r[1]) != n || normValue(r[2]) != n {
		t.Errorf("auto-increment: count, distinct, max = %v, want all %s", r, n)
	}
}
