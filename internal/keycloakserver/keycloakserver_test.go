package keycloakserver

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMoveServiceURLs: every loopback agentauth URL of the shipped realm
// file moves to the given port, and nothing else in it changes.
func TestMoveServiceURLs(t *testing.T) {
	realm, err := os.ReadFile(filepath.Join("..", "..", "deploy", "keycloak", "realm-agents.json"))
	if err != nil {
		t.Fatal(err)
	}
	moved := MoveServiceURLs(realm, 41234)
	if bytes.Contains(moved, []byte(":18080")) {
		t.Errorf("a URL on 18080 is left:\n%s", moved)
	}
	for _, want := range []string{
		`"http://127.0.0.1:41234/auth/callback"`, `"http://localhost:41234/auth/callback"`,
		`"http://127.0.0.1:41234"`, `"backchannel.logout.url": "http://127.0.0.1:41234/auth/backchannel-logout"`,
		`"http://127.0.0.1:41234/*##http://localhost:41234/*"`,
	} {
		if !bytes.Contains(moved, []byte(want)) {
			t.Errorf("moved realm lacks %s", want)
		}
	}
	if back := bytes.ReplaceAll(moved, []byte(":41234"), []byte(":18080")); !bytes.Equal(back, realm) {
		t.Errorf("moving changed more than the port")
	}
}

// TestNewestJDK: the JDK chosen is the highest JAVA_VERSION of at least
// the minimum among the folders with a bin/java.
func TestNewestJDK(t *testing.T) {
	root := t.TempDir()
	jdk := func(name, release string, withJava bool) {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if release != "" {
			if err := os.WriteFile(filepath.Join(dir, "release"), []byte(release), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if withJava {
			if err := os.WriteFile(filepath.Join(dir, "bin", "java"), nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	jdk("java-17-openjdk-amd64", "JAVA_VERSION=\"17.0.15\"\n", true)
	if got := newestJDK(root, 21); got != "" {
		t.Errorf("only 17: got %q, want none", got)
	}
	jdk("temurin-21-jdk-amd64", "IMPLEMENTOR=\"Eclipse Adoptium\"\nJAVA_VERSION=\"21.0.9\"\n", true)
	jdk("temurin-25-jdk-amd64", "JAVA_VERSION=\"25.0.3\"\n", true)
	jdk("temurin-26-jre-broken", "JAVA_VERSION=\"26\"\n", false) // no bin/java
	jdk("openjdk-21-no-release", "", true)
	if got, want := newestJDK(root, 21), filepath.Join(root, "temurin-25-jdk-amd64"); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestLayOut: a run's folder links the distribution's libraries and themes
// and holds its own kc.sh, conf, optimized build and copy of the template
// data, so that Keycloak writes nothing into the cache.
func TestLayOut(t *testing.T) {
	home, template, dir := t.TempDir(), t.TempDir(), t.TempDir()
	for f, body := range map[string]string{
		"bin/kc.sh": "#!/bin/sh\n", "version.txt": "Keycloak - Version 26.7.3\n", "conf/keycloak.conf": "# conf\n",
		"lib/quarkus-run.jar": "jar", "lib/quarkus/generated-bytecode.jar": "built", "lib/lib/main/a.jar": "a",
		"lib/app/keycloak.jar": "app", "themes/README.md": "", "providers/README.md": "",
	} {
		write(t, filepath.Join(home, f), body)
	}
	write(t, filepath.Join(template, "h2", "keycloakdb.mv.db"), "db")
	if err := layOut(home, dir, template); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"lib/lib", "lib/app", "themes", "providers"} {
		if target, err := os.Readlink(filepath.Join(dir, l)); err != nil || target != filepath.Join(home, l) {
			t.Errorf("%s: link to %q (%v), want to %s", l, target, err, filepath.Join(home, l))
		}
	}
	for _, f := range []string{"bin/kc.sh", "version.txt", "conf/keycloak.conf", "lib/quarkus-run.jar", "lib/quarkus/generated-bytecode.jar", "data/h2/keycloakdb.mv.db"} {
		fi, err := os.Lstat(filepath.Join(dir, f))
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: %v %v, want a file of its own", f, fi, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "bin", "kc.sh")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("kc.sh: %v %v, want executable", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "data", "import")); err != nil || !fi.IsDir() {
		t.Errorf("data/import: %v", err)
	}
}

func write(t *testing.T, file, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	mode := os.FileMode(0o644)
	if strings.HasSuffix(file, ".sh") {
		mode = 0o755
	}
	if err := os.WriteFile(file, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}
