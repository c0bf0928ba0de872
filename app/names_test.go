package app

import (
	"errors"
	"maps"
	"testing"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports/mocks"
)

// TestNames: agents are named from their records (a gone or unnamed agent
// left out, a store failure an error, each id read once); an asker
// "agent:<id>" is named by its agent; without managed keys (hybrid mode)
// no person is named here.
func TestNames(t *testing.T) {
	ctx := t.Context()
	agents := mocks.NewMockAgentStore(gomock.NewController(t))
	agents.EXPECT().GetAgent(gomock.Any(), "agt_n").Return(domain.Agent{ID: "agt_n", Name: "notes <agent>"}, nil).Times(2)
	agents.EXPECT().GetAgent(gomock.Any(), "agt_u").Return(domain.Agent{ID: "agt_u"}, nil)
	agents.EXPECT().GetAgent(gomock.Any(), "agt_gone").Return(domain.Agent{}, domain.ErrNotFound)
	n := &Names{agents: agents}
	got, err := n.Agents(ctx, "agt_n", "agt_u", "agt_gone", "", "agt_n")
	if err != nil || !maps.Equal(got, map[string]string{"agt_n": "notes <agent>"}) {
		t.Errorf("Agents = %v, %v; want agt_n named", got, err)
	}
	got, err = n.People(ctx, "alice", "agent:agt_n")
	if err != nil || !maps.Equal(got, map[string]string{"agent:agt_n": "notes <agent>"}) {
		t.Errorf("People = %v, %v; want the agent asker named, alice unknown without managed keys", got, err)
	}
	broken := errors.New("store down")
	agents.EXPECT().GetAgent(gomock.Any(), "agt_x").Return(domain.Agent{}, broken)
	if _, err := n.Agents(ctx, "agt_x"); !errors.Is(err, broken) {
		t.Errorf("a failing store: %v, want its error", err)
	}
}
