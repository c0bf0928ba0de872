//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// walkBlock is one fenced block of a walkthrough in the documentation,
// with what the HTML comment before it says of it.
type walkBlock struct {
	line       int    // of the opening fence in the document
	lang, text string // its info string and content
	// ownTerminal: it runs on in a terminal of its own; the walkthrough
	// goes on once it prints ready.
	ownTerminal bool
	ready       string
	// file: the block is a file saved under this name in the folder the
	// walkthrough's shell is in.
	file string
	// then: once the block ran, the walkthrough goes on when its shell
	// prints this (a job it left in the background says it).
	then string
}

var walkDirective = []struct {
	re  *regexp.Regexp
	set func(b *walkBlock, arg string)
}{
	{regexp.MustCompile(`^own terminal, ready when it prints "(.+)"$`), func(b *walkBlock, a string) { b.ownTerminal, b.ready = true, a }},
	{regexp.MustCompile(`^file ([\w.-]+)$`), func(b *walkBlock, a string) { b.file = a }},
	{regexp.MustCompile(`^then wait until it prints "(.+)"$`), func(b *walkBlock, a string) { b.then = a }},
}

// shownOnly are the languages of blocks that show something (an output,
// a configuration) and are not run.
var shownOnly = map[string]bool{"": true, "json": true, "text": true}

// walkthroughBlocks reads the blocks between <!-- walkthrough --> and
// <!-- /walkthrough --> of doc. Every sh block runs; a block of another
// language runs only as a file, but for what shows an output (shownOnly);
// a comment <!-- walkthrough: … --> says
// how the block after it runs (walkDirective). Anything else is an error,
// so that a block cannot silently drop out of the test.
func walkthroughBlocks(doc string) ([]walkBlock, error) {
	start := strings.Index(doc, "\n<!-- walkthrough -->\n")
	end := strings.Index(doc, "\n<!-- /walkthrough -->\n")
	if start < 0 || end < start {
		return nil, fmt.Errorf("no <!-- walkthrough --> … <!-- /walkthrough --> in the document")
	}
	first := strings.Count(doc[:start], "\n") + 2
	lines := strings.Split(doc[start+1:end], "\n")
	var blocks []walkBlock
	var pending *walkBlock
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if d, ok := strings.CutPrefix(l, "<!-- walkthrough: "); ok {
			pending = nil
			if d, ok = strings.CutSuffix(d, " -->"); ok {
				for _, w := range walkDirective {
					if m := w.re.FindStringSubmatch(d); m != nil {
						pending = &walkBlock{}
						w.set(pending, m[1])
					}
				}
			}
			if pending == nil || i+1 == len(lines) || !strings.HasPrefix(lines[i+1], "```") {
				return nil, fmt.Errorf("line %d: %q: not a directive followed by a fenced block", first+i, l)
			}
			continue
		}
		info, ok := strings.CutPrefix(l, "```")
		if !ok {
			continue
		}
		b := walkBlock{}
		if pending != nil {
			b, pending = *pending, nil
		}
		b.line, b.lang = first+i, strings.TrimSpace(info)
		var text []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			text = append(text, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: the block is not closed", b.line)
		}
		b.text = strings.Join(text, "\n") + "\n"
		switch {
		case b.file != "":
		case b.ownTerminal || b.then != "":
			if b.lang != "sh" {
				return nil, fmt.Errorf("line %d: a %q block runs only as a file", b.line, b.lang)
			}
		case b.lang == "sh":
		case shownOnly[b.lang]:
			continue
		default:
			return nil, fmt.Errorf("line %d: a %q block without <!-- walkthrough: file NAME --> is neither run nor saved", b.line, b.lang)
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// shownOutput is what the block says it prints: its comment lines,
// "# …" each, where "…" stands for any text.
func (b walkBlock) shownOutput() []string {
	if b.lang != "sh" || b.ownTerminal {
		return nil
	}
	var out []string
	for _, l := range strings.Split(b.text, "\n") {
		if c, ok := strings.CutPrefix(l, "# "); ok {
			out = append(out, c)
		}
	}
	return out
}

// matchesShown reports whether line is what shown shows, "…" standing for
// any text.
func matchesShown(line, shown string) bool {
	parts := strings.Split(shown, "…")
	if len(parts) == 1 {
		return line == shown
	}
	rest, ok := strings.CutPrefix(line, parts[0])
	if !ok {
		return false
	}
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return strings.HasSuffix(rest, parts[len(parts)-1])
}

// TestWalkthroughBlocks: the reading of a walkthrough, on a document with
// every kind of block and directive, and its mistakes.
func TestWalkthroughBlocks(t *testing.T) {
	doc := "# T\n```sh\nnot in it\n```\n<!-- walkthrough -->\nText\n<!-- walkthrough: own terminal, ready when it prints \"up\" -->\n```sh\nserve\n```\n" +
		"```sh\na=1\n# shown …\n```\n<!-- walkthrough: file x.go -->\n```go\npackage x\n```\n<!-- walkthrough: then wait until it prints \"w\" -->\n```sh\nrun &\n```\n" +
		"```\nnot run: output\n```\n<!-- /walkthrough -->\n"
	got, err := walkthroughBlocks(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []walkBlock{
		{line: 8, lang: "sh", text: "serve\n", ownTerminal: true, ready: "up"},
		{line: 11, lang: "sh", text: "a=1\n# shown …\n"},
		{line: 16, lang: "go", text: "package x\n", file: "x.go"},
		{line: 20, lang: "sh", text: "run &\n", then: "w"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("walkthroughBlocks =\n%+v\nwant\n%+v", got, want)
	}
	for _, bad := range []string{
		"<!-- walkthrough -->\n```js\nx\n```\n<!-- /walkthrough -->\n",
		"<!-- walkthrough -->\n<!-- walkthrough: run it twice -->\n```sh\nx\n```\n<!-- /walkthrough -->\n",
		"<!-- walkthrough -->\n<!-- walkthrough: file a.go -->\n\n```go\nx\n```\n<!-- /walkthrough -->\n",
		"<!-- walkthrough -->\n```sh\nx\n<!-- /walkthrough -->\n",
		"no walkthrough",
	} {
		if _, err := walkthroughBlocks("# T\n" + bad); err == nil {
			t.Errorf("walkthroughBlocks(%q): no error", bad)
		}
	}
	for _, c := range []struct {
		line, shown string
		want        bool
	}{
		{"approved", "approved", true},
		{"approved!", "approved", false},
		{`{"a":1,"b":2}`, `{"a":1,…}`, true},
		{`{"a":2,"b":2}`, `{"a":1,…}`, false},
		{"x apikey:12 y", "x apikey:… y", true},
		{"x apikey:12 z", "x apikey:… y", false},
		{"a b c", "a…b…c", true},
		{"a c b", "a…b…c", false},
	} {
		if got := matchesShown(c.line, c.shown); got != c.want {
			t.Errorf("matchesShown(%q, %q) = %v", c.line, c.shown, got)
		}
	}
}

// TestGatewayWalkthrough runs the walkthrough of docs/gateway.md ("Step
// by step, against your own agentauth") from the document itself: its
// own-terminal blocks (go run ./cmd/agentauth serve, the sample server)
// each in a process of its own, the rest one after another in one bash,
// as a reader types them, the files saved where the reader saves them.
// What changes is the place only: free ports for 8080 and 8090 (the
// service's port, SERVICE_PORT, and the text of every block), a fresh
// home folder (so local mode's key is a new one), Go's and npm's caches
// and settings kept. Each block must end well and print no API error,
// and every line the document shows a block printing ("# …") must be
// printed. The agents' held writes are approved by the document's curl
// (the console's approval is TestConsoleServerSetUp's).
func TestGatewayWalkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the walkthrough needs %s: %v", tool, err)
		}
	}
	doc, err := os.ReadFile(filepath.Join(repo, "docs", "gateway.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := walkthroughBlocks(string(doc))
	if err != nil {
		t.Fatalf("docs/gateway.md: %v", err)
	}
	port, notesPort := freePort(t), freePort(t)
	moved := strings.NewReplacer("127.0.0.1:8080", fmt.Sprintf("127.0.0.1:%d", port), "127.0.0.1:8090", fmt.Sprintf("127.0.0.1:%d", notesPort))
	env := walkthroughEnv(t, port)
	scratch := t.TempDir()

	shell := exec.Command("bash", "--norc", "--noprofile")
	shell.Dir, shell.Env = repo, env
	shell.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its background jobs stop with it
	stdin, err := shell.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	sh := startProc(t, shell, "walkthrough-shell")
	t.Cleanup(func() { _ = syscall.Kill(-shell.Process.Pid, syscall.SIGTERM) })
	send := func(s string) {
		t.Helper()
		if _, err := fmt.Fprintln(stdin, s); err != nil {
			t.Fatalf("the walkthrough's shell: %v", err)
		}
	}
	send("set -eo pipefail")

	type shown struct {
		from  int // the shell's first line of output after the block began
		line  int
		lines []string
	}
	var shows []shown
	for i, b := range blocks {
		text := moved.Replace(b.text)
		file := filepath.Join(scratch, fmt.Sprintf("block%d-line%d", i, b.line))
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		switch {
		case b.ownTerminal:
			cmd := exec.Command("bash", file)
			cmd.Dir, cmd.Env = repo, env
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // go run's child stops with it
			p := startProc(t, cmd, fmt.Sprintf("walkthrough-line%d", b.line))
			t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) })
			p.waitLine(t, 10*time.Minute, b.ready)
			continue
		case b.file != "":
			send(fmt.Sprintf("cp %q %q", file, b.file))
			continue
		}
		from := len(sh.output())
		done := fmt.Sprintf("walkthrough: block of line %d done", b.line)
		send(fmt.Sprintf("source %q; echo %q", file, done))
		_, at := sh.waitLineFrom(t, from, 10*time.Minute, done)
		for _, l := range sh.output()[from:at] {
			if strings.Contains(l, `{"error":`) {
				t.Fatalf("the block of line %d printed an API error: %s", b.line, l)
			}
		}
		if b.then != "" {
			sh.waitLineFrom(t, from, 10*time.Minute, b.then)
		}
		if s := b.shownOutput(); len(s) > 0 {
			shows = append(shows, shown{from, b.line, s})
		}
	}
	send("wait; exit")
	select {
	case <-sh.exited:
	case <-time.After(time.Minute):
		t.Fatal("the walkthrough's shell did not end")
	}
	if code := shell.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("the walkthrough's shell ended with %d", code)
	}
	out := sh.output()
	for _, s := range shows {
		for _, want := range s.lines {
			want = moved.Replace(want)
			found := false
			for _, l := range out[s.from:] {
				if matchesShown(l, want) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("the block of line %d shows %q: not printed", s.line, want)
			}
		}
	}
}

// walkthroughEnv is the environment of the walkthrough's processes: this
// one's but for a fresh home and temporary folder and agentauth's port,
// with Go's and npm's caches and settings where they are (they are found
// through the home folder otherwise).
func walkthroughEnv(t *testing.T, port int) []string {
	t.Helper()
	keep := map[string]string{}
	for _, v := range []string{"GOENV", "GOPATH", "GOMODCACHE", "GOCACHE"} {
		out, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", v, err)
		}
		keep[v] = strings.TrimSpace(string(out))
	}
	npmCache, err := exec.Command("npm", "config", "get", "cache").Output()
	if err != nil {
		t.Fatalf("npm config get cache: %v", err)
	}
	home, _ := os.UserHomeDir()
	keep["npm_config_cache"] = strings.TrimSpace(string(npmCache))
	keep["npm_config_userconfig"] = filepath.Join(home, ".npmrc")
	keep["npm_config_prefer_offline"] = "true"
	keep["HOME"] = t.TempDir()
	keep["TMPDIR"] = t.TempDir()
	keep["SERVICE_PORT"] = fmt.Sprint(port)
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := keep[name]; ok || strings.HasPrefix(name, "SERVICE_") || strings.HasPrefix(name, "XDG_") {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range keep {
		env = append(env, k+"="+v)
	}
	return env
}
