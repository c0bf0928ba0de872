// Command testsum counts the tests of one suite of the test command and
// prints the totals of all suites at the end, so that a run says in one place
// how many tests passed, failed and were skipped, per suite and in all.
//
//	testsum start -totals F                                          # a new run: F emptied, its start noted
//	testsum run -suite go -totals F -- go test -json ./...          # Go's test2json stream
//	testsum run -suite js -format tap -totals F -- node --test --test-reporter=tap …
//	testsum run -suite helm -format line -totals F -- bash check.sh  # ends "N passed, M failed"
//	testsum report -totals F -expect go,helm                         # the table and "N passed, M failed"
//
// run starts the suite's command, passes its output through (for Go: package
// results, build errors and the output of failed tests, or everything with
// -v), and appends one line to the totals file with the suite's wall time. A
// command that exits non-zero without a failed test counted (a build error,
// a crash, a time-out) is recorded with one failure, so the report never
// shows a green total for a red run. With -hold the output is kept until the
// suite ends and then printed in one piece, so that suites run at the same
// time do not mix their lines. run exits with the command's status; report
// exits 1 when any suite failed.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// counts is one suite's line in the totals file.
type counts struct {
	Suite                 string
	Passed, Failed, Skips int
	Seconds               float64 // the suite's wall time
}

// startedPrefix begins the totals file's first line: when the run started
// (Unix milliseconds), for the report's whole-run time.
const startedPrefix = "# started "

// start begins a run: the totals file is emptied and the time noted.
func start(args []string) error {
	fs := flag.NewFlagSet("start", flag.ContinueOnError)
	totals := fs.String("totals", "", "the totals file the suites will append to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *totals == "" {
		return errors.New("start needs -totals")
	}
	return os.WriteFile(*totals, []byte(fmt.Sprintf("%s%d\n", startedPrefix, time.Now().UnixMilli())), 0o644)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "start":
		err = start(os.Args[2:])
	case "run":
		var code int
		code, err = run(os.Args[2:], os.Stdout)
		if err == nil && code != 0 {
			os.Exit(code)
		}
	case "report":
		var failed bool
		failed, err = report(os.Args[2:], os.Stdout)
		if err == nil && failed {
			os.Exit(1)
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(2)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: testsum start -totals FILE\n       testsum run -suite NAME [-format go|tap|line] [-v] [-hold] -totals FILE -- COMMAND [ARG…]\n       testsum report -totals FILE [-expect SUITE,…]")
	os.Exit(2)
}

// run runs the command after the flags and records its counts; it returns
// the command's exit status.
func run(args []string, out io.Writer) (int, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	suite := fs.String("suite", "", "the suite's name in the report (one word)")
	format := fs.String("format", "go", "go (go test -json), tap (node --test-reporter=tap) or line (a line \"N passed, M failed\")")
	verbose := fs.Bool("v", false, "go: print every test's output, not only failed tests'")
	hold := fs.Bool("hold", false, "keep the output until the suite ends, then print it in one piece")
	totals := fs.String("totals", "", "the file the suite's counts are appended to")
	if err := fs.Parse(args); err != nil {
		return 0, err
	}
	if *suite == "" || *totals == "" || strings.ContainsAny(*suite, " \t\n") {
		return 0, errors.New("run needs -suite (one word) and -totals")
	}
	if fs.NArg() == 0 {
		return 0, errors.New("run needs the suite's command after --")
	}
	if *hold {
		held, err := os.CreateTemp("", "testsum-"+*suite+"-*.log")
		if err != nil {
			return 0, err
		}
		defer os.Remove(held.Name())
		defer held.Close()
		fmt.Fprintf(out, "testsum: suite %s started; its output follows when it ends\n", *suite)
		final := out
		out = held
		defer func() {
			_ = withLock(*totals, func() error { // one suite's output at a time
				if _, err := held.Seek(0, io.SeekStart); err == nil {
					_, _ = io.Copy(final, held)
				}
				return nil
			})
		}()
	}
	began := time.Now()
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	startErr := cmd.Start()
	pw.Close()
	if startErr != nil {
		pr.Close()
		return 0, startErr
	}
	c, countErr := count(*format, pr, out, *verbose)
	if countErr != nil {
		io.Copy(out, pr) // the rest unread, so the command never blocks on a full pipe
	}
	pr.Close()
	code := 0
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return 0, err
		}
		code = exit.ExitCode()
		if code < 0 { // killed by a signal
			code = 1
		}
	}
	if countErr != nil {
		return code, countErr
	}
	c.Seconds = time.Since(began).Seconds()
	fmt.Fprintf(out, "testsum: suite %s ended in %s: %d passed, %d failed, %d skipped\n", *suite, duration(c.Seconds), c.Passed, c.Failed, c.Skips)
	return code, appendTotals(*totals, *suite, c, code, out)
}

// withLock runs f holding an exclusive lock on the file path (created if
// missing), which serialises the suites of one run.
func withLock(path string, f func() error) error {
	lf, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	return f()
}

// duration prints seconds as 1m23s, or 4.2s under a minute.
func duration(seconds float64) string {
	d := time.Duration(seconds * float64(time.Second))
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func count(format string, in io.Reader, out io.Writer, verbose bool) (counts, error) {
	switch format {
	case "go":
		return countGo(in, out, verbose)
	case "tap":
		return countTAP(in, out)
	case "line":
		return countLine(in, out)
	}
	return counts{}, fmt.Errorf("unknown -format %q", format)
}

// appendTotals writes the suite's line; a failed command with no failed test
// counted is one failure.
func appendTotals(totals, suite string, c counts, code int, out io.Writer) error {
	if code != 0 && c.Failed == 0 {
		fmt.Fprintf(out, "testsum: %s exited %d with no failed test counted; counted as one failure\n", suite, code)
		c.Failed = 1
	}
	return withLock(totals, func() error {
		f, err := os.OpenFile(totals, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(f, "%s %d %d %d %.1f\n", suite, c.Passed, c.Failed, c.Skips, c.Seconds)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

// event is the part of a test2json event this command reads.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// countGo reads go test -json. Package-level output (the "ok"/"FAIL" lines)
// and build output are printed as they come; a test's own output is held
// until it ends and printed only when it failed (or always with verbose).
func countGo(in io.Reader, out io.Writer, verbose bool) (counts, error) {
	var c counts
	held := map[string][]string{} // package + "\x00" + test → output lines
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			fmt.Fprintf(out, "%s\n", line) // not JSON: go's own messages (a vet or setup error)
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch {
		case e.Action == "build-output":
			io.WriteString(out, e.Output)
		case e.Test == "":
			if e.Action == "output" {
				io.WriteString(out, e.Output)
			}
		case e.Action == "output":
			if verbose {
				io.WriteString(out, e.Output)
			} else {
				held[key] = append(held[key], e.Output)
			}
		case e.Action == "pass", e.Action == "fail", e.Action == "skip":
			switch e.Action {
			case "pass":
				c.Passed++
			case "fail":
				c.Failed++
				if !verbose {
					io.WriteString(out, strings.Join(held[key], ""))
				}
			case "skip":
				c.Skips++
			}
			delete(held, key)
		}
	}
	return c, sc.Err()
}

var tapCount = regexp.MustCompile(`^# (pass|fail|skipped|skip|todo|cancelled) (\d+)\s*$`)

// countTAP reads node's TAP reporter and its closing counts ("# pass N").
func countTAP(in io.Reader, out io.Writer) (counts, error) {
	var c counts
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		fmt.Fprintln(out, sc.Text())
		m := tapCount.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		switch m[1] {
		case "pass":
			c.Passed += n
		case "fail", "cancelled":
			c.Failed += n
		default:
			c.Skips += n
		}
	}
	return c, sc.Err()
}

var lineCount = regexp.MustCompile(`(\d+) passed, (\d+) failed(?:, (\d+) skipped)?`)

// countLine reads a runner that ends with "N passed, M failed"; the last such
// line counts.
func countLine(in io.Reader, out io.Writer) (counts, error) {
	var c counts
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		fmt.Fprintln(out, sc.Text())
		if m := lineCount.FindStringSubmatch(sc.Text()); m != nil {
			c.Passed, _ = strconv.Atoi(m[1])
			c.Failed, _ = strconv.Atoi(m[2])
			c.Skips = 0
			if m[3] != "" {
				c.Skips, _ = strconv.Atoi(m[3])
			}
		}
	}
	return c, sc.Err()
}

func report(args []string, out io.Writer) (failed bool, err error) {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	totals := fs.String("totals", "", "the totals file the suites appended to")
	expect := fs.String("expect", "", "comma-separated suites that must have reported (one missing counts as failed)")
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	seen := map[string]bool{}
	data, err := os.ReadFile(*totals)
	if err != nil {
		return false, err
	}
	var all counts
	var started int64
	fmt.Fprintf(out, "\n%-10s %8s %8s %8s %9s\n", "suite", "passed", "failed", "skipped", "time")
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if ms, ok := strings.CutPrefix(line, startedPrefix); ok {
			started, _ = strconv.ParseInt(ms, 10, 64)
			continue
		}
		if line == "" {
			continue
		}
		var c counts
		if _, err := fmt.Sscanf(line, "%s %d %d %d %f", &c.Suite, &c.Passed, &c.Failed, &c.Skips, &c.Seconds); err != nil {
			return false, fmt.Errorf("totals line %q: %w", line, err)
		}
		fmt.Fprintf(out, "%-10s %8d %8d %8d %9s\n", c.Suite, c.Passed, c.Failed, c.Skips, duration(c.Seconds))
		seen[c.Suite] = true
		all.Passed += c.Passed
		all.Failed += c.Failed
		all.Skips += c.Skips
	}
	for _, s := range strings.Split(*expect, ",") {
		if s != "" && !seen[s] {
			fmt.Fprintf(out, "%-10s did not report (its runner never started?): counted as one failure\n", s)
			all.Failed++
		}
	}
	if started > 0 {
		fmt.Fprintf(out, "%-37s %9s\n", "the whole run (suites side by side)", duration(time.Since(time.UnixMilli(started)).Seconds()))
	}
	fmt.Fprintf(out, "%d passed, %d failed, %d skipped\n", all.Passed, all.Failed, all.Skips)
	return all.Failed > 0, nil
}
