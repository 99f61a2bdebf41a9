package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// jdbcJar is Debian's MariaDB Connector/J (apt-get install libmariadb-java).
const jdbcJar = "/usr/share/java/mariadb-java-client.jar"

// jdbcProgram prepares dpsql statements on the server through Connector/J
// with useServerPrepStmts=true and prints what it gets.
const jdbcProgram = `
import java.sql.*;

public class PreparedDpsql {
    public static void main(String[] args) throws Exception {
        String url = "jdbc:mariadb://" + args[0] + "/?user=root&password=" + args[1] + "&useServerPrepStmts=true";
        try (Connection c = DriverManager.getConnection(url)) {
            try (PreparedStatement p = c.prepareStatement("SET PRIVACY BUDGET FOR raw.t WITH EPSILON = ?, DELTA = ?")) {
                p.setDouble(1, 2);
                p.setDouble(2, 1e-9);
                p.executeUpdate();
            }
            try (PreparedStatement p = c.prepareStatement("SHOW PRIVACY BUDGET FOR raw.t")) {
                try (ResultSet r = p.executeQuery()) {
                    while (r.next()) {
                        System.out.println("budget " + r.getString(1) + " " + r.getString(2));
                    }
                }
            }
            try (PreparedStatement p = c.prepareStatement("CREATE SYNTHETIC TABLE lab.s FROM raw.t USING independent WITH EPSILON = ?, SEED = ?")) {
                p.setDouble(1, 0.5);
                p.setInt(2, 3);
                System.out.println("created " + (p.executeUpdate() > 0));
            }
            try (PreparedStatement p = c.prepareStatement("SHOW ERROR BOUNDS FOR lab.s CONFIDENCE ?")) {
                p.setDouble(1, 0.9);
                System.out.println("bounds columns " + p.getMetaData().getColumnCount());
                p.executeQuery();
            } catch (SQLException e) {
                System.out.println("bounds error " + e.getErrorCode());
            }
            try (PreparedStatement p = c.prepareStatement("SET PRIVACY BUDGET FOR raw.t WITH EPSILON = ?, DELTA = ?")) {
                p.setString(1, "3");
                p.setDouble(2, 1e-9);
                p.executeUpdate();
            } catch (SQLException e) {
                System.out.println("string epsilon " + e.getErrorCode());
            }
            try (PreparedStatement p = c.prepareStatement("INSERT INTO work.t VALUES (?)")) {
                p.setInt(1, 7);
                p.executeUpdate();
            }
            try (PreparedStatement p = c.prepareStatement("SELECT a FROM work.t WHERE a > ?")) {
                p.setInt(1, 1);
                try (ResultSet r = p.executeQuery()) {
                    while (r.next()) {
                        System.out.println("work " + r.getInt(1));
                    }
                }
            }
        }
    }
}
`

// TestJDBCServerPreparedDpsql: MariaDB Connector/J with useServerPrepStmts
// prepares dpsql statements on the server (skipped without java and the
// connector).
func TestJDBCServerPreparedDpsql(t *testing.T) {
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("java not installed")
	}
	if _, err := os.Stat(jdbcJar); err != nil {
		t.Skip(jdbcJar + " not installed (apt-get install libmariadb-java)")
	}
	s := startServer(t, t.TempDir())
	root := s.root()
	setupPrepared(t, root)
	mustExec(t, root, "ALTER TABLE raw.t SET DOMAIN income BETWEEN 0 AND 1000 BINS 10", "ALTER TABLE raw.t SET DOMAIN city IN ('a', 'b', 'c')",
		"CREATE DATABASE work", "CREATE TABLE work.t (a INT PRIMARY KEY)")
	src := filepath.Join(t.TempDir(), "PreparedDpsql.java")
	if err := os.WriteFile(src, []byte(jdbcProgram), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(java, "-cp", jdbcJar, src, s.addr, rootPassword).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "budget raw.t 2|created true|bounds columns 5|bounds error 9116|string epsilon 1064|work 7"
	if got := strings.Join(lines(string(out)), "|"); got != want {
		t.Errorf("Connector/J printed %q, want %q", got, want)
	}
}
