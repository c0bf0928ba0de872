package app

import (
	"context"
	"fmt"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// teamOf looks up the projects p belongs to.
func teamOf(ctx context.Context, projects ports.ProjectStore, p domain.Principal) (domain.Team, error) {
	list, err := projects.ListProjects(ctx, ports.ProjectFilter{Member: p.Subject})
	if err != nil {
		return domain.Team{}, fmt.Errorf("look up projects of %s: %w", p.Subject, err)
	}
	return p.Key.NarrowTeam(domain.TeamOf(p.Subject, list)), nil
}
