package domain

import (
	"fmt"
	"time"
)

// A policy rule's condition (its When) is an expression over the call, in
// CEL (docs/api.md lists the variables). The domain keeps the text and
// decides with a compiled Condition; compiling is the use cases' (with
// cel-go), so that the domain stays free of it.

// MaxConditionBytes bounds a rule's condition text.
const MaxConditionBytes = 2048

// ReasonPolicyConditionError: a rule's condition could not be evaluated
// for the call (a missing argument, a wrong type, its cost over the
// limit): the call is denied, never allowed on a guess.
const ReasonPolicyConditionError = "policy_condition_error"

// CallFacts is what a condition sees of a call.
type CallFacts struct {
	Tool   string
	Server string
	// Arguments are the call's canonical JSON arguments (an object); nil
	// when they are not known (listing the tools a caller may call):
	// a condition that reads them then neither holds nor fails.
	Arguments []byte
	// ArgumentsValue is where the first condition that reads Arguments
	// keeps them parsed, for the next of the same decision.
	ArgumentsValue any
	SessionMode    SessionMode
	Project        string
	// Depth is the acting agent's depth (a session's root agent: 0), Chain
	// the subject then the agents, root first, the acting agent last.
	Depth   int
	Chain   []string
	Subject string
	Roles   []Role
	Now     time.Time
}

// ConditionResult is what a condition says of a call.
type ConditionResult int

// Condition results. Unknown: it depends on what the facts do not know.
const (
	ConditionFalse ConditionResult = iota
	ConditionTrue
	ConditionUnknown
)

// Condition is a rule's compiled condition.
type Condition interface {
	Eval(f *CallFacts) (ConditionResult, error)
}

// ConditionCompiler compiles a condition's text; the error of a text that
// does not compile is a *ConditionError.
type ConditionCompiler func(text string) (Condition, error)

// ConditionError is a condition that does not compile: where (1-based line
// and column of its text) and why.
type ConditionError struct {
	Line, Column int
	Message      string
}

func (e *ConditionError) Error() string {
	return fmt.Sprintf("when: %d:%d: %s", e.Line, e.Column, e.Message)
}

// Unwrap makes it invalid input (a 400).
func (e *ConditionError) Unwrap() error { return ErrInvalidInput }

// brokenCondition stands for a stored condition that no longer compiles:
// every evaluation fails, so the rule denies (fail closed).
type brokenCondition struct{ err error }

func (b brokenCondition) Eval(*CallFacts) (ConditionResult, error) { return ConditionFalse, b.err }
