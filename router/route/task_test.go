package route

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/replicas"
)

// newTaskPlanner is a planner over replicas of the given tasks, replica
// ri serving models[i] as tasks[i].
func newTaskPlanner(t *testing.T, models, tasks []string) *Planner {
	t.Helper()
	pl := newTestPlannerOf(t, models...)
	list := make([]replicas.Replica, len(models))
	for i := range list {
		list[i] = replicas.Replica{ID: fmt.Sprintf("r%d", i), Model: models[i], Address: fmt.Sprintf("127.0.0.1:%d", 1+i), BlockSize: 16, Task: tasks[i]}
	}
	pl.d.Replicas.Replace(list)
	return pl
}

// TestPlanFollowsTheTask: a request goes only to replicas whose task
// serves its endpoint, as vLLM registers routes by task; a model none of
// whose replicas does is a 400 naming the model's task, in OpenAI's shape.
func TestPlanFollowsTheTask(t *testing.T) {
	// r0 generates for gen, r1 embeds for emb, r2 classifies for cls; the
	// mixed model has a generate (r3) and an embed (r4) replica.
	pl := newTaskPlanner(t,
		[]string{"gen", "emb", "cls", "mixed", "mixed"},
		[]string{"", replicas.TaskEmbed, replicas.TaskClassify, replicas.TaskGenerate, replicas.TaskEmbed})
	chat := func(model string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
	}
	input := func(model string) string {
		return `{"model":"` + model + `","input":"hi","query":"q","documents":["d"]}`
	}
	tests := []struct {
		kind    openai.Kind
		body    string
		replica string // the only replica it may go to
		err     string
	}{
		{openai.Chat, chat("gen"), "r0", ""},
		{openai.Completion, `{"model":"gen","prompt":"hi"}`, "r0", ""},
		{openai.Embeddings, input("emb"), "r1", ""},
		{openai.Pooling, input("emb"), "r1", ""},
		{openai.Pooling, input("cls"), "r2", ""},
		{openai.Classify, input("cls"), "r2", ""},
		{openai.Score, `{"model":"emb","queries":"q","documents":["d"]}`, "r1", ""},
		{openai.Rerank, input("cls"), "r2", ""},
		{openai.Chat, chat("mixed"), "r3", ""},
		{openai.Embeddings, input("mixed"), "r4", ""},
		{openai.Chat, chat("emb"), "", "The model `emb` is a pooling model (task embed) and does not serve /v1/chat/completions."},
		{openai.Completion, `{"model":"cls","prompt":"x"}`, "", "is a pooling model (task classify) and does not serve /v1/completions"},
		{openai.Embeddings, input("gen"), "", "The model `gen` is a generative model and does not serve /v1/embeddings."},
		{openai.Embeddings, input("cls"), "", "task classify) and does not serve /v1/embeddings"},
		{openai.Classify, input("emb"), "", "does not serve /classify"},
		{openai.Rerank, input("gen"), "", "does not serve /rerank"},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s %s", endpoints[tt.kind], tt.body)
		for range 4 { // any of several decisions would show a wrong replica
			p, e := pl.Plan(context.Background(), Input{Kind: tt.kind, Body: []byte(tt.body)})
			if tt.err != "" {
				if e == nil || e.Status != http.StatusBadRequest || e.Type != openai.TypeInvalidRequest || !strings.Contains(e.Message, tt.err) {
					t.Errorf("%s: %v; want a 400 saying %q", name, e, tt.err)
				}
				break
			}
			if e != nil {
				t.Fatalf("%s: %v", name, e)
			}
			for _, a := range p.Attempts {
				if a.Replica != tt.replica {
					t.Errorf("%s: attempt on %s; want only %s", name, a.Replica, tt.replica)
				}
			}
			if len(p.Attempts) == 0 {
				t.Errorf("%s: no attempt", name)
			}
			pl.Release(p)
		}
	}
}
