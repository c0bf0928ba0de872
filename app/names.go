package app

import (
	"context"
	"errors"
	"strings"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Names looks up the labels shown beside subjects and agent ids (see
// domain/names.go): what a console page or an API answer adds to the ids
// it shows already. A name is never an identity and never decides
// anything; nothing here is on a request's decision path.
type Names struct {
	people *APIKeys
	agents ports.AgentStore
}

// maxAgentsNamed bounds the agents one Agents call reads: a page names at
// most a few per row.
const maxAgentsNamed = 200

// People returns the names known for subjects, by subject (nil when none):
// a person's display name last seen, a service account's name. A subject
// "agent:<id>" (an agent's token asked) is named by its agent. In hybrid
// mode people are known at the centre: none here.
func (n *Names) People(ctx context.Context, subjects ...string) (map[string]string, error) {
	var people, agents []string
	for _, s := range subjects {
		if id, ok := strings.CutPrefix(s, agentSubject); ok {
			agents = append(agents, id)
		} else {
			people = append(people, s)
		}
	}
	names, err := n.people.PersonNames(ctx, people...)
	if err != nil || len(agents) == 0 {
		return names, err
	}
	byID, err := n.Agents(ctx, agents...)
	for id, name := range byID {
		if names == nil {
			names = map[string]string{}
		}
		names[agentSubject+id] = name
	}
	return names, err
}

// Lookup returns the names of people (People) and of agents (Agents) at
// once: what one page or answer shows.
func (n *Names) Lookup(ctx context.Context, people, agents []string) (personNames, agentNames map[string]string, err error) {
	if personNames, err = n.People(ctx, people...); err != nil {
		return nil, nil, err
	}
	agentNames, err = n.Agents(ctx, agents...)
	return personNames, agentNames, err
}

// agentSubject prefixes the agent that asked for a call by its token.
const agentSubject = "agent:"

// Agents returns the names of the agents ids, by id (nil when none); an
// agent without a name, or gone, is left out.
func (n *Names) Agents(ctx context.Context, ids ...string) (map[string]string, error) {
	var names map[string]string
	asked := map[string]bool{}
	for _, id := range ids {
		if id == "" || asked[id] || len(asked) >= maxAgentsNamed {
			continue
		}
		asked[id] = true
		a, err := n.agents.GetAgent(ctx, id)
		if errors.Is(err, domain.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if a.Name != "" {
			if names == nil {
				names = map[string]string{}
			}
			names[id] = a.Name
		}
	}
	return names, nil
}
