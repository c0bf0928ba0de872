// Package policycel compiles the conditions of policy rules, CEL
// expressions over a tool call (domain.CallFacts), with cel-go: checked
// for types when a rule is created, evaluated within a cost limit.
package policycel

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"

	"github.com/agentauth/agentauth/domain"
)

// CostLimit bounds one evaluation, in CEL's cost units (about one per
// operation, and per 10 bytes a string function reads): a condition that
// would cost more fails, and its rule denies.
const CostLimit = 100_000

// The variables a condition reads (docs/api.md shows each with examples).
const (
	varArgs           = "args"
	varTool           = "tool"
	varServer         = "server"
	varSessionMode    = "session.mode"
	varSessionProject = "session.project"
	varAgentDepth     = "agent.depth"
	varAgentChain     = "agent.chain"
	varSubject        = "subject"
	varRoles          = "roles"
	varNow            = "now"
)

var env = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(varArgs, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varTool, cel.StringType),
		cel.Variable(varServer, cel.StringType),
		cel.Variable(varSessionMode, cel.StringType),
		cel.Variable(varSessionProject, cel.StringType),
		cel.Variable(varAgentDepth, cel.IntType),
		cel.Variable(varAgentChain, cel.ListType(cel.StringType)),
		cel.Variable(varSubject, cel.StringType),
		cel.Variable(varRoles, cel.ListType(cel.StringType)),
		cel.Variable(varNow, cel.TimestampType),
		ext.Strings(),
		cel.ParserRecursionLimit(64),
		cel.ParserExpressionSizeLimit(domain.MaxConditionBytes),
	)
})

// condition is one compiled condition: its program, and the one that
// evaluates it with the arguments unknown (made on first use: only
// listings need it).
type condition struct {
	text    string
	full    cel.Program
	partial func() (cel.Program, error)
}

// Compile checks text (a bool expression over the variables) and compiles
// it; a text that does not compile is a *domain.ConditionError.
func Compile(text string) (domain.Condition, error) {
	e, err := env()
	if err != nil {
		return nil, fmt.Errorf("policycel: environment: %w", err)
	}
	if strings.TrimSpace(text) == "" {
		return nil, &domain.ConditionError{Line: 1, Column: 1, Message: "the condition is empty"}
	}
	ast, iss := e.Compile(text)
	if iss != nil && iss.Err() != nil {
		errs := iss.Errors()
		if len(errs) == 0 {
			return nil, &domain.ConditionError{Line: 1, Column: 1, Message: iss.Err().Error()}
		}
		loc := errs[0].Location
		return nil, &domain.ConditionError{Line: max(loc.Line(), 1), Column: loc.Column() + 1, Message: errs[0].Message}
	}
	if !ast.OutputType().IsExactType(types.BoolType) {
		return nil, &domain.ConditionError{Line: 1, Column: 1,
			Message: "the condition must be true or false; it is " + ast.OutputType().String() + " (compare it: args.dry_run == true)"}
	}
	full, err := e.Program(ast, cel.CostLimit(CostLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, &domain.ConditionError{Line: 1, Column: 1, Message: err.Error()}
	}
	c := &condition{text: text, full: full}
	c.partial = sync.OnceValues(func() (cel.Program, error) {
		return e.Program(ast, cel.CostLimit(CostLimit), cel.EvalOptions(cel.OptPartialEval))
	})
	return c, nil
}

// Eval evaluates the condition for f: with f.Arguments nil, a condition
// that reads the arguments is domain.ConditionUnknown.
func (c *condition) Eval(f *domain.CallFacts) (domain.ConditionResult, error) {
	act := &activation{f: f}
	var (
		out ref.Val
		err error
	)
	if f.Arguments == nil {
		prg, perr := c.partial()
		if perr != nil {
			return domain.ConditionFalse, perr
		}
		vars, perr := cel.PartialVars(act, cel.AttributePattern(varArgs))
		if perr != nil {
			return domain.ConditionFalse, perr
		}
		out, _, err = prg.Eval(vars)
	} else {
		out, _, err = c.full.Eval(act)
	}
	if act.err != nil {
		return domain.ConditionFalse, act.err
	}
	if err != nil {
		return domain.ConditionFalse, errors.New(strings.TrimPrefix(err.Error(), "operation cancelled: "))
	}
	switch {
	case types.IsUnknown(out):
		return domain.ConditionUnknown, nil
	case out == types.True:
		return domain.ConditionTrue, nil
	case out == types.False:
		return domain.ConditionFalse, nil
	}
	return domain.ConditionFalse, fmt.Errorf("the condition gave %v, not true or false", out)
}

// activation hands the interpreter each variable as it reads it.
type activation struct {
	f   *domain.CallFacts
	err error
}

func (a *activation) Parent() interpreter.Activation { return nil }

func (a *activation) ResolveName(name string) (any, bool) {
	f := a.f
	switch name {
	case varArgs:
		if f.Arguments == nil {
			return nil, false
		}
		if v, ok := f.ArgumentsValue.(ref.Val); ok {
			return v, true
		}
		var m map[string]any
		if err := json.Unmarshal(f.Arguments, &m); err != nil || m == nil {
			a.err = fmt.Errorf("the arguments are not a JSON object")
			return nil, false
		}
		v := types.DefaultTypeAdapter.NativeToValue(m)
		f.ArgumentsValue = v
		return v, true
	case varTool:
		return types.String(f.Tool), true
	case varServer:
		return types.String(f.Server), true
	case varSessionMode:
		return types.String(f.SessionMode), true
	case varSessionProject:
		return types.String(f.Project), true
	case varAgentDepth:
		return types.Int(f.Depth), true
	case varAgentChain:
		return types.NewStringList(types.DefaultTypeAdapter, f.Chain), true
	case varSubject:
		return types.String(f.Subject), true
	case varRoles:
		roles := make([]string, len(f.Roles))
		for i, r := range f.Roles {
			roles[i] = string(r)
		}
		return types.NewStringList(types.DefaultTypeAdapter, roles), true
	case varNow:
		return types.Timestamp{Time: f.Now.UTC()}, true
	}
	return nil, false
}
