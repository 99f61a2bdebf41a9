package federated_test

import (
	"context"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/federated"
)

func TestParseConnection(t *testing.T) {
	tests := []struct {
		in     string
		want   federated.Conn
		str    string // canonical String (empty: the input)
		masked string
	}{
		{
			in:     "postgresql://alice:s3cret@127.0.0.1:5432/census/public.adult",
			want:   federated.Conn{Driver: "postgresql", User: "alice", Password: "s3cret", Host: "127.0.0.1", Port: 5432, Database: "census", Schema: "public", Table: "adult"},
			masked: "postgresql://alice:***@127.0.0.1:5432/census/public.adult",
		},
		{
			in:     "postgres://alice:pw@db.example:6000/census/adult?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem",
			want:   federated.Conn{Driver: "postgresql", User: "alice", Password: "pw", Host: "db.example", Port: 6000, Database: "census", Schema: "public", Table: "adult", Params: url.Values{"sslmode": {"verify-full"}, "sslrootcert": {"/etc/ca.pem"}}},
			str:    "postgresql://alice:pw@db.example:6000/census/public.adult?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem",
			masked: "postgresql://alice:***@db.example:6000/census/public.adult?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem",
		},
		{
			in:     "mysql://bob:p%40ss%3Aw%2Fd@[::1]/shop/orders?tls=skip-verify",
			want:   federated.Conn{Driver: "mysql", User: "bob", Password: "p@ss:w/d", Host: "::1", Port: 3306, Database: "shop", Table: "orders", Params: url.Values{"tls": {"skip-verify"}}},
			str:    "mysql://bob:p%40ss%3Aw%2Fd@[::1]:3306/shop/orders?tls=skip-verify",
			masked: "mysql://bob:***@[::1]:3306/shop/orders?tls=skip-verify",
		},
		{
			in:     "mysql://carol@10.0.0.1:3307/db/My%20Table",
			want:   federated.Conn{Driver: "mysql", User: "carol", Host: "10.0.0.1", Port: 3307, Database: "db", Table: "My Table"},
			str:    "mysql://carol@10.0.0.1:3307/db/My%20Table",
			masked: "mysql://carol@10.0.0.1:3307/db/My%20Table",
		},
		{
			in:     "postgresql://u:pw@h:1/d/s%2Fx.t%2Fy",
			want:   federated.Conn{Driver: "postgresql", User: "u", Password: "pw", Host: "h", Port: 1, Database: "d", Schema: "s/x", Table: "t/y"},
			masked: "postgresql://u:***@h:1/d/s%2Fx.t%2Fy",
		},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c, err := federated.ParseConnection(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*c, tt.want) {
				t.Fatalf("got %+v\nwant %+v", *c, tt.want)
			}
			str := tt.str
			if str == "" {
				str = tt.in
			}
			if c.String() != str {
				t.Errorf("String() = %q, want %q", c.String(), str)
			}
			if c.Masked() != tt.masked {
				t.Errorf("Masked() = %q, want %q", c.Masked(), tt.masked)
			}
			if c.Password != "" && strings.Contains(c.Masked(), c.Password) {
				t.Errorf("Masked() %q contains the password", c.Masked())
			}
			back, err := federated.ParseConnection(c.String())
			if err != nil || !reflect.DeepEqual(back, c) {
				t.Errorf("round trip: %+v, %v", back, err)
			}
		})
	}
}

func TestParseConnectionErrors(t *testing.T) {
	const pw = "Pa55word"
	tests := []struct{ in, want string }{
		{"census.adult", "must be a URL"},
		{"oracle://u:" + pw + "@h/d/t", "unknown connection scheme"},
		{"postgresql://u:" + pw + "@h/d", "must name a database and a table"},
		{"postgresql://u:" + pw + "@h/d/s.t/x", "must name a database and a table"},
		{"postgresql://u:" + pw + "@h/d/a.b.c", "bad table"},
		{"postgresql://u:" + pw + "@h/d/.t", "bad table"},
		{"mysql://u:" + pw + "@h//t", "must name a database and a table"},
		{"mysql://:" + pw + "@h/d/t", "no user"},
		{"mysql://u:" + pw + "@:3306/d/t", "no host"},
		{"mysql://u:" + pw + "@h:99999/d/t", "bad port"},
		{"mysql://u:" + pw + "@h/d/t?sslmode=require", `unknown mysql connection parameter "sslmode"`},
		{"postgresql://u:" + pw + "@h/d/t?sslmode=sometimes", "want one of"},
		{"postgresql://u:" + pw + "@h/d/t?sslmode=require&sslmode=disable", "exactly one"},
		{"postgresql://u:" + pw + "@h/d/t?tls=true", "unknown postgresql connection parameter"},
		{"postgresql://u:" + pw + "@h/d/t#frag", "not of the form"},
		{"postgresql://u:" + pw + "%zz@h/d/t", "not a valid URL"},
	}
	for _, tt := range tests {
		_, err := federated.ParseConnection(tt.in)
		if err == nil {
			t.Errorf("%s: no error", tt.in)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %q, want it to contain %q", tt.in, err, tt.want)
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("%s: error %q contains the password", tt.in, err)
		}
	}
}

func TestOpenTLSConfigErrors(t *testing.T) {
	ctx := context.Background()
	for _, s := range []string{
		"mysql://u:Secret9@127.0.0.1:1/d/t?tls-ca=%2Fno%2Fsuch%2Fca.pem",
		"postgresql://u:Secret9@127.0.0.1:1/d/t?sslmode=verify-full&sslrootcert=%2Fno%2Fsuch%2Fca.pem",
	} {
		c, err := federated.ParseConnection(s)
		if err != nil {
			t.Fatal(err)
		}
		_, err = federated.Open(ctx, c)
		if !errors.Is(err, federated.ErrConnect) {
			t.Errorf("%s: %v, want ErrConnect", c.Masked(), err)
		}
		if strings.Contains(federated.Detail(err), "Secret9") {
			t.Errorf("%s: detail has the password: %s", c.Masked(), federated.Detail(err))
		}
	}
}
