package dpparse

import "testing"

func TestParseHierarchical(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ALTER TABLE census.persons SET PRIVACY UNIT census.households ON persons.hh_id = households.hh_id MAX 8",
			"ALTER TABLE `census`.`persons` SET PRIVACY UNIT `census`.`households` ON `persons`.`hh_id` = `households`.`hh_id` MAX 8"},
		{"alter table persons set privacy unit households on hh_id = hh_id max 3", "ALTER TABLE `persons` SET PRIVACY UNIT `households` ON `hh_id` = `hh_id` MAX 3"},
		{"CREATE SYNTHETIC TABLES syn.households, syn.persons FROM census.households, census.persons USING hpd_fixed WITH EPSILON = 1",
			"CREATE SYNTHETIC TABLES `syn`.`households`, `syn`.`persons` FROM `census`.`households`, `census`.`persons` USING hpd_fixed WITH EPSILON = 1"},
		{"CREATE SYNTHETIC TABLES s.h, s.p FROM c.h, c.p USING mwem WITH EPSILON = 0.5, ROUNDS = 10 WORKLOAD ALL 2-WAY",
			"CREATE SYNTHETIC TABLES `s`.`h`, `s`.`p` FROM `c`.`h`, `c`.`p` USING mwem WITH EPSILON = 0.5, ROUNDS = 10 WORKLOAD ALL 2-WAY"},
	} {
		st, _, ok, err := Parse(c.in)
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", c.in, ok, err)
		}
		if got := st.String(); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{
		"ALTER TABLE p SET PRIVACY UNIT h ON p.a = h.b",
		"ALTER TABLE p SET PRIVACY UNIT h ON p.a = h.b MAX 0",
		"CREATE SYNTHETIC TABLES a, b FROM c USING",
	} {
		if _, _, _, err := Parse(bad); err == nil {
			t.Errorf("%s: parsed", bad)
		}
	}
}
