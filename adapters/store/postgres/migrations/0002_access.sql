CREATE TABLE projects (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE project_members (
    project TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    subject TEXT NOT NULL,
    lead    BOOLEAN NOT NULL,
    PRIMARY KEY (project, subject)
);
CREATE INDEX project_members_subject ON project_members (subject);

CREATE INDEX sessions_project_created ON sessions (project, created_at DESC);

CREATE TABLE servers (
    name       TEXT PRIMARY KEY,
    url        TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE tools (
    name       TEXT PRIMARY KEY,
    server     TEXT NOT NULL REFERENCES servers (name),
    read_only  BOOLEAN NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE policies (
    id         TEXT PRIMARY KEY,
    effect     TEXT NOT NULL,
    tool       TEXT NOT NULL,
    scope      TEXT NOT NULL,
    value      TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE agents (
    id         TEXT PRIMARY KEY,
    session    TEXT NOT NULL,
    parent     TEXT NOT NULL,
    depth      INTEGER NOT NULL,
    tools      TEXT,            -- JSON array of tool names; NULL: every tool
    read_only  BOOLEAN NOT NULL,
    approval   BOOLEAN NOT NULL,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX agents_session ON agents (session, created_at);

CREATE TABLE tool_calls (
    id           TEXT PRIMARY KEY,
    session      TEXT NOT NULL,
    agent        TEXT NOT NULL,
    tool         TEXT NOT NULL,
    effect       TEXT NOT NULL,
    reason       TEXT NOT NULL,
    rule         TEXT NOT NULL,
    message      TEXT NOT NULL,
    status       TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    resolved_by  TEXT NOT NULL DEFAULT '',
    resolved_at  BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX tool_calls_session_created ON tool_calls (session, created_at DESC);
CREATE INDEX tool_calls_created ON tool_calls (created_at DESC);
