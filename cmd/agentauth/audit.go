package main

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/adapters/auditsign"
	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/adapters/store/sqlite"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

const auditUsage = `agentauth audit: check the audit log offline

Usage:
  agentauth audit verify (--db FILE | --postgres URL | --export FILE) [--checkpoints FILE]... --public-key FILE...
      Verify the whole chain: every record, every link, and the signed checkpoints (from the
      database, and from each --checkpoints file: the API's answer of GET /api/v2/audit/checkpoints,
      NDJSON, or the service's log lines). Prints every break by kind; exit status 1 on any break.
  agentauth audit public-key [serve flags: --config, --data-dir, --audit-signing-key-file]
      Print the public key checkpoints are signed with (hex), for --public-key: of the configured key
      (or SERVICE_AUDIT_SIGNING_KEY), else {dataDir}/secrets/audit-signing.key, else the key the
      service published at {dataDir}/audit-signing.pub.
`

func auditCommand(args []string, env map[string]string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, auditUsage)
		return exitUsage
	}
	switch args[0] {
	case "verify":
		return auditVerify(args[1:], stdout, stderr)
	case "public-key":
		return auditPublicKey(args[1:], env, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, auditUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "agentauth audit: unknown command %q\n\n%s", args[0], auditUsage)
	return exitUsage
}

// auditPublicKey prints the public key of the configured signing key (the
// setting or SERVICE_AUDIT_SIGNING_KEY), else of the default key file, else
// the key the service published in its data folder: a service given its
// key in the environment (a Kubernetes Secret) keeps no key file, and the
// secret is rarely in the shell that asks. It never creates a key: that is
// the service's first start.
func auditPublicKey(args []string, env map[string]string, stdout, stderr io.Writer) int {
	if wantsHelp(args) {
		fmt.Fprint(stdout, auditUsage)
		return exitOK
	}
	cfg, ok := configFromCommandLine(args, env, stderr)
	if !ok {
		return exitUsage
	}
	// A configured key (its file read by the configuration); else the
	// default key file, which must exist already.
	key, err := auditsign.ParseSeed(cfg.Audit.SigningKey)
	path := cmp.Or(cfg.Audit.SigningKeyFile, "SERVICE_AUDIT_SIGNING_KEY")
	var pub ed25519.PublicKey
	if cfg.Audit.SigningKey == "" {
		path = auditsign.DefaultKeyPath(cfg.DataDir)
		if _, statErr := os.Stat(path); statErr == nil {
			key, _, _, err = auditsign.LoadKey(cfg.DataDir)
		} else if pub, err = readPublishedKey(cfg.DataDir); err == nil {
			path = auditsign.PublicKeyPath(cfg.DataDir)
		} else {
			fmt.Fprintf(stderr, "agentauth audit public-key: no signing key at %s nor a published key at %s (the service writes both on its first start; "+
				"one given SERVICE_AUDIT_SIGNING_KEY writes the published key only): %v\n", path, auditsign.PublicKeyPath(cfg.DataDir), statErr)
			return exitFailure
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentauth audit public-key: %v\n", err)
		return exitFailure
	}
	if pub == nil {
		pub = key.Public().(ed25519.PublicKey)
	}
	fmt.Fprintln(stdout, auditsign.FormatPublicKey(pub))
	fmt.Fprintf(stderr, "key id %s (from %s)\n", domain.AuditKeyID(pub), path)
	return exitOK
}

// readPublishedKey reads the public key a service wrote to its data folder.
func readPublishedKey(dataDir string) (ed25519.PublicKey, error) {
	text, err := os.ReadFile(auditsign.PublicKeyPath(dataDir))
	if err != nil {
		return nil, err
	}
	return auditsign.ParsePublicKey(string(text))
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func auditVerify(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		dbPath, pgURL, export string
		cpFiles, keyArgs      multiFlag
	)
	fs.StringVar(&dbPath, "db", "", "SQLite database file ({dataDir}/agentauth.db); opened read-only")
	fs.StringVar(&pgURL, "postgres", "", "PostgreSQL URL of the shared database")
	fs.StringVar(&export, "export", "", "NDJSON export (GET /api/v2/audit/export)")
	fs.Var(&cpFiles, "checkpoints", "file of checkpoints: API answer, NDJSON or service log lines (repeatable)")
	fs.Var(&keyArgs, "public-key", "file holding a public key in hex, as `agentauth audit public-key` prints it (repeatable)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	given := 0
	for _, s := range []string{dbPath, pgURL, export} {
		if s != "" {
			given++
		}
	}
	if given != 1 || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentauth audit verify: give exactly one of --db, --postgres, --export\n\n%s", auditUsage)
		return exitUsage
	}
	keys, err := readPublicKeys(keyArgs)
	if err != nil {
		fmt.Fprintf(stderr, "agentauth audit verify: %v\n", err)
		return exitUsage
	}
	src, closeSrc, err := openAuditSource(dbPath, pgURL, export)
	if err != nil {
		fmt.Fprintf(stderr, "agentauth audit verify: %v\n", err)
		return exitFailure
	}
	defer closeSrc()
	cps, err := src.checkpoints()
	if err != nil {
		fmt.Fprintf(stderr, "agentauth audit verify: read checkpoints: %v\n", err)
		return exitFailure
	}
	for _, f := range cpFiles {
		more, err := readCheckpointFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "agentauth audit verify: %v\n", err)
			return exitFailure
		}
		cps = append(cps, more...)
	}
	cps = mergeCheckpoints(cps)
	if len(cps) > 0 && len(keys) == 0 {
		fmt.Fprintf(stderr, "agentauth audit verify: %d checkpoint(s) found but no --public-key to check them with\n", len(cps))
		return exitUsage
	}
	rep, err := app.VerifyAll(src.start, src.records, cps, keys, func(checked, seq int64) {
		fmt.Fprintf(stderr, "verified %d records (up to seq %d)…\n", checked, seq)
	})
	if err != nil {
		fmt.Fprintf(stderr, "agentauth audit verify: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "records checked: %d (head seq %d, hash %s)\n", rep.Checked, rep.HeadSeq, rep.HeadHash)
	fmt.Fprintf(stdout, "checkpoints: %d given, %d matched against records\n", len(cps), rep.Anchored)
	if rep.OK() {
		fmt.Fprintln(stdout, "OK: the chain holds")
		return exitOK
	}
	fmt.Fprintf(stdout, "BROKEN: %d break(s)\n", rep.BreakCount)
	for _, b := range rep.Breaks {
		where := fmt.Sprintf("seq %d", b.Seq)
		if b.Last != b.Seq {
			where = fmt.Sprintf("seq %d-%d", b.Seq, b.Last)
		}
		fmt.Fprintf(stdout, "%-18s %-16s %s\n", b.Kind, where, b.Reason)
	}
	if hidden := rep.BreakCount - int64(len(rep.Breaks)); hidden > 0 {
		fmt.Fprintf(stdout, "… and %d more\n", hidden)
	}
	return exitFailure
}

// readPublicKeys reads each --public-key: a file holding a hex key, or the
// hex key itself.
func readPublicKeys(args []string) (map[string]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for _, a := range args {
		text := a
		if b, err := os.ReadFile(a); err == nil {
			text = string(b)
		}
		k, err := auditsign.ParsePublicKey(text)
		if err != nil {
			return nil, fmt.Errorf("--public-key %s: %w", a, err)
		}
		keys = append(keys, k)
	}
	return app.KeySet(keys...), nil
}

func readCheckpointFile(path string) ([]domain.AuditCheckpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--checkpoints: %w", err)
	}
	defer f.Close()
	cps, err := auditjson.ReadCheckpoints(f)
	if err != nil {
		return nil, fmt.Errorf("--checkpoints %s: %w", path, err)
	}
	return cps, nil
}

// mergeCheckpoints orders checkpoints by seq and drops exact copies (the
// same checkpoint from the database and from the log). Different
// checkpoints at one seq are both kept: verification shows the conflict.
func mergeCheckpoints(cps []domain.AuditCheckpoint) []domain.AuditCheckpoint {
	slices.SortStableFunc(cps, func(a, b domain.AuditCheckpoint) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), strings.Compare(a.Signature, b.Signature))
	})
	return slices.CompactFunc(cps, func(a, b domain.AuditCheckpoint) bool { return a == b })
}

// auditSource is where verify reads records and checkpoints.
type auditSource struct {
	start       domain.ChainStart // the first record kept
	records     func(emit func(domain.AuditRecord) error) error
	checkpoints func() ([]domain.AuditCheckpoint, error)
}

type chainStore interface {
	ports.AuditStore
	ports.AuditCheckpointStore
}

func openAuditSource(dbPath, pgURL, export string) (auditSource, func(), error) {
	ctx := context.Background()
	if export != "" {
		return auditSource{
			start: domain.Genesis,
			records: func(emit func(domain.AuditRecord) error) error {
				f, err := os.Open(export)
				if err != nil {
					return err
				}
				defer f.Close()
				return auditjson.ReadRecords(f, emit)
			},
			checkpoints: func() ([]domain.AuditCheckpoint, error) { return nil, nil },
		}, func() {}, nil
	}
	var (
		st      chainStore
		cleanup func()
		err     error
	)
	if dbPath != "" {
		st, cleanup, err = sqlite.OpenReadOnly(sqlite.Path(dbPath), zap.NewNop())
	} else {
		st, cleanup, err = postgres.Open(ctx, postgres.URL(pgURL), zap.NewNop())
	}
	if err != nil {
		return auditSource{}, nil, err
	}
	// PostgreSQL keeps the retention cut in the database.
	start := domain.Genesis
	if cs, ok := st.(ports.AuditChainStarter); ok {
		if start, err = cs.ChainStart(ctx); err != nil {
			cleanup()
			return auditSource{}, nil, err
		}
	}
	audit := app.NewAudit(st)
	src := auditSource{
		start:   start,
		records: func(emit func(domain.AuditRecord) error) error { return audit.Export(ctx, start.Next-1, emit) },
		checkpoints: func() ([]domain.AuditCheckpoint, error) {
			var all []domain.AuditCheckpoint
			for after := int64(0); ; {
				page, err := st.Checkpoints(ctx, after, 1000)
				if err != nil || len(page) == 0 {
					return all, err
				}
				all = append(all, page...)
				after = page[len(page)-1].Seq
			}
		},
	}
	// In SQLite mode the records are the audit log beside the database
	// (the database holds their index, which may trail it after a crash).
	if logDir := filepath.Join(filepath.Dir(dbPath), "audit"); dbPath != "" && hasLog(logDir) {
		if src.start, err = auditlog.LogStart(logDir); err != nil {
			cleanup()
			return auditSource{}, nil, err
		}
		src.records = func(emit func(domain.AuditRecord) error) error { return auditlog.ReadLog(logDir, src.start.Next, emit) }
	}
	return src, cleanup, nil
}

// hasLog tells whether dir holds an audit log (adapters/auditlog).
func hasLog(dir string) bool {
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	return len(segs) > 0
}
