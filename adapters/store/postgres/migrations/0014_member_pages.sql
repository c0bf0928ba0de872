-- A project's members page by subject, compared byte-wise as in SQLite:
-- the primary key (project, subject) uses the database's collation, so a
-- page in byte order needs its own index to stay a range scan.
CREATE INDEX project_members_project_subject ON project_members (project, subject COLLATE "C");
