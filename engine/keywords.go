package engine

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// MySQL's non-reserved keywords as identifiers.
//
// MySQL accepts its non-reserved keywords (work, status, data, level,
// value, comment, action, names, events, account, begin, commit, …) as
// unquoted identifiers; vitess's grammar does not everywhere: `CREATE
// DATABASE work`, `DROP DATABASE status`, `USE comment`, `SELECT * FROM
// account.t` are syntax errors. When the MySQL parser fails, quoteKeywords
// backquotes the keyword nearest before the error's position, if it is a
// word that vitess reads as a keyword but MySQL 8.0 does not reserve, and
// parses again, keeping a rewrite that parses or moves the error further
// on, a few times at most. A statement that fails anyway gets the
// original error.

// maxKeywordParses bounds the parses quoteKeywords tries.
const maxKeywordParses = 8

// errPosition finds the byte offset in a vitess syntax error.
var errPosition = regexp.MustCompile(`syntax error at position (\d+)`)

// keywordCandidate is a word of a query that MySQL would read as an
// identifier and vitess reads as a keyword: [start, end) in the query.
type keywordCandidate struct{ start, end int }

// quoteKeywords returns query with non-reserved keywords backquoted where
// that makes parse (which parses a query and returns its error) succeed,
// and ok == false when no such rewrite was found. err is the error parse
// gave query. inserted holds the offsets in the result of the backquotes
// added, in increasing order.
func quoteKeywords(query string, err error, parse func(string) error) (fixed string, inserted []int, ok bool) {
	// vitess parses the query without its leading blanks: positions in
	// its errors are relative to that.
	lead := len(query) - len(strings.TrimLeftFunc(query, unicode.IsSpace))
	pos, isSyntax := syntaxErrorPos(err, lead)
	if !isSyntax {
		return "", nil, false
	}
	cur := query
	skip := map[int]bool{} // candidates (by start in cur) tried without progress
	for parses := 0; parses < maxKeywordParses; parses++ {
		// The last untried candidate that starts before the error.
		var c keywordCandidate
		found := false
		for _, k := range keywordCandidates(cur) {
			if k.start < pos && !skip[k.start] {
				c, found = k, true
			}
		}
		if !found {
			return "", nil, false
		}
		next := cur[:c.start] + "`" + cur[c.start:c.end] + "`" + cur[c.end:]
		perr := parse(next)
		if perr == nil {
			return next, addQuotes(inserted, c.start, c.end), true
		}
		npos, isSyntax := syntaxErrorPos(perr, lead)
		if !isSyntax || npos <= pos+2 {
			skip[c.start] = true // no progress: try an earlier candidate
			continue
		}
		// Progress: what failed before may work now.
		cur, pos, skip = next, npos, map[int]bool{}
		inserted = addQuotes(inserted, c.start, c.end)
	}
	return "", nil, false
}

// addQuotes records backquotes added around [s, e) of a text whose earlier
// insertions are at inserted, all as offsets in the new text, in order.
func addQuotes(inserted []int, s, e int) []int {
	out := make([]int, 0, len(inserted)+2)
	for _, p := range inserted {
		if p > s {
			p += 2
		}
		out = append(out, p)
	}
	out = append(out, s, e+1)
	slices.Sort(out)
	return out
}

// originalOffset maps an offset in a text with backquotes inserted at
// inserted back to the original text.
func originalOffset(off int, inserted []int) int {
	n := off
	for _, p := range inserted {
		if p < off {
			n--
		}
	}
	return n
}

// syntaxErrorPos returns the position of a vitess syntax error in the text
// given to the parser, which had lead leading blanks removed.
func syntaxErrorPos(err error, lead int) (int, bool) {
	if err == nil {
		return 0, false
	}
	m := errPosition.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, false
	}
	p, convErr := strconv.Atoi(m[1])
	if convErr != nil {
		return 0, false
	}
	return p + lead, true
}

// keywordCandidates lists the words of query that vitess reads as keywords
// and MySQL 8.0 does not reserve.
func keywordCandidates(query string) []keywordCandidate {
	var out []keywordCandidate
	tk := ast.NewStringTokenizer(query)
	for {
		typ, val := tk.Scan()
		if typ == 0 || typ == ast.LEX_ERROR {
			return out
		}
		if typ == ast.ID || !isWord(val) {
			continue
		}
		end := tk.Position - 1
		start := end - len(val)
		if start < 0 || end > len(query) || !strings.EqualFold(query[start:end], string(val)) {
			continue
		}
		if _, reserved := mysqlReserved[strings.ToLower(string(val))]; reserved {
			continue
		}
		if start > 0 && (query[start-1] == '@' || query[start-1] == '`') {
			continue
		}
		out = append(out, keywordCandidate{start, end})
	}
}

// isWord reports whether v is an unquoted identifier-like word that does
// not start with '_' (charset introducers such as _utf8mb4 are keywords).
func isWord(v []byte) bool {
	if len(v) == 0 || !(v[0] >= 'a' && v[0] <= 'z' || v[0] >= 'A' && v[0] <= 'Z') {
		return false
	}
	for _, c := range v {
		if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// mysqlReserved are MySQL 8.0's reserved words (the keywords marked (R)
// in the reference manual's "Keywords and Reserved Words"), lower-case.
var mysqlReserved = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(`
		accessible add all alter analyze and as asc asensitive
		before between bigint binary blob both by
		call cascade case change char character check collate column condition constraint continue convert create cross
		cube cume_dist current_date current_time current_timestamp current_user cursor
		database databases day_hour day_microsecond day_minute day_second dec decimal declare default delayed delete
		dense_rank desc describe deterministic distinct distinctrow div double drop dual
		each else elseif empty enclosed escaped except exists exit explain
		false fetch first_value float float4 float8 for force foreign from fulltext function
		generated get grant group grouping groups
		having high_priority hour_microsecond hour_minute hour_second
		if ignore in index infile inner inout insensitive insert int int1 int2 int3 int4 int8 integer intersect interval
		into io_after_gtids io_before_gtids is iterate
		join json_table
		key keys kill
		lag last_value lateral lead leading leave left like limit linear lines load localtime localtimestamp lock long
		longblob longtext loop low_priority
		master_bind master_ssl_verify_server_cert match maxvalue mediumblob mediumint mediumtext middleint
		minute_microsecond minute_second mod modifies
		natural not no_write_to_binlog nth_value ntile null numeric
		of on optimize optimizer_costs option optionally or order out outer outfile over
		partition percent_rank precision primary procedure purge
		range rank read reads read_write real recursive references regexp release rename repeat replace require
		resignal restrict return revoke right rlike row rows row_number
		schema schemas second_microsecond select sensitive separator set show signal smallint spatial specific sql
		sqlexception sqlstate sqlwarning sql_big_result sql_calc_found_rows sql_small_result ssl starting stored
		straight_join system
		table terminated then tinyblob tinyint tinytext to trailing trigger true
		undo union unique unlock unsigned update usage use using utc_date utc_time utc_timestamp
		values varbinary varchar varcharacter varying virtual
		when where while window with write
		xor year_month zerofill _filename`) {
		m[w] = struct{}{}
	}
	return m
}()
