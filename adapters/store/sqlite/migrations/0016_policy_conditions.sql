-- A policy rule may carry a condition: a CEL expression over the call
-- (docs/api.md), checked and compiled when the rule is created. '' holds
-- always (every rule stored before).
ALTER TABLE policies ADD COLUMN when_expr TEXT NOT NULL DEFAULT '';
