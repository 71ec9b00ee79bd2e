package consul

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func replicaInstance(id string, meta map[string]string) Instance {
	m := map[string]string{MetaReplica: "alloc-" + id + "/vllm", MetaModel: "qwen"}
	for k, v := range meta {
		if v == "<delete>" {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	return Instance{ServiceID: "svc-" + id, Service: "vllm", Node: "n1", Address: "10.0.0.1", Port: 8000, Tags: []string{ReplicaTag}, Meta: m}
}

func TestConvertReplicas(t *testing.T) {
	tests := []struct {
		name    string
		in      []Instance
		wantIDs []string
		want    map[string]Replica // checked in full when set
		skipped []string           // substrings, one per skipped instance
	}{
		{
			name:    "defaults",
			in:      []Instance{replicaInstance("a", nil)},
			wantIDs: []string{"alloc-a/vllm"},
			want: map[string]Replica{"alloc-a/vllm": {
				ID: "alloc-a/vllm", Model: "qwen", Address: "10.0.0.1", Port: 8000,
				BlockSize: DefaultBlockSize, Task: TaskGenerate, Health: HealthPassing, Node: "n1", ServiceID: "svc-a",
			}},
		},
		{
			name: "all meta",
			in: []Instance{replicaInstance("a", map[string]string{
				MetaBlockSize: "64", MetaKVEvents: "true", MetaRole: "prefill", MetaTask: TaskEmbed,
				MetaRoot: "org/qwen-7b", MetaMaxModelLen: "32768", MetaDataParallelSize: "4"})},
			wantIDs: []string{"alloc-a/vllm"},
			want: map[string]Replica{"alloc-a/vllm": {
				ID: "alloc-a/vllm", Model: "qwen", Address: "10.0.0.1", Port: 8000,
				BlockSize: 64, KVEvents: true, Role: "prefill", Task: TaskEmbed, Root: "org/qwen-7b", MaxModelLen: 32768, DataParallelSize: 4, Health: HealthPassing, Node: "n1", ServiceID: "svc-a",
			}},
		},
		{
			name:    "sorted by id",
			in:      []Instance{replicaInstance("c", nil), replicaInstance("a", nil), replicaInstance("b", nil)},
			wantIDs: []string{"alloc-a/vllm", "alloc-b/vllm", "alloc-c/vllm"},
		},
		{
			name: "one bad entry skipped, others kept",
			in: []Instance{
				replicaInstance("a", nil),
				replicaInstance("b", map[string]string{MetaBlockSize: "sixteen"}),
				replicaInstance("c", nil),
			},
			wantIDs: []string{"alloc-a/vllm", "alloc-c/vllm"},
			skipped: []string{"svc-b"},
		},
		{
			name:    "no address",
			in:      []Instance{func() Instance { i := replicaInstance("a", nil); i.Address = ""; return i }()},
			skipped: []string{"address"},
		},
		{
			name: "duplicate replica id keeps the first",
			in: []Instance{
				replicaInstance("a", nil),
				func() Instance { i := replicaInstance("a", nil); i.ServiceID = "svc-dup"; return i }(),
			},
			wantIDs: []string{"alloc-a/vllm"},
			skipped: []string{"svc-dup"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, skipped := ConvertReplicas(tc.in)
			var ids []string
			for _, r := range got {
				ids = append(ids, r.ID)
				if want, ok := tc.want[r.ID]; ok {
					if d := cmp.Diff(want, r); d != "" {
						t.Errorf("replica %s (-want +got):\n%s", r.ID, d)
					}
				}
			}
			if d := cmp.Diff(tc.wantIDs, ids); d != "" {
				t.Errorf("ids (-want +got):\n%s", d)
			}
			checkSkipped(t, skipped, tc.skipped)
		})
	}
}

// TestConvertReplicasSkipsBadMeta: an instance with missing or malformed
// meta is skipped, and the skip names the key.
func TestConvertReplicasSkipsBadMeta(t *testing.T) {
	tests := []struct {
		name    string
		in      []Instance
		skipped []string
	}{
		{name: "missing replica id", in: []Instance{replicaInstance("a", map[string]string{MetaReplica: "<delete>"})}, skipped: []string{MetaReplica + " is missing"}},
		{name: "missing model", in: []Instance{replicaInstance("a", map[string]string{MetaModel: ""})}, skipped: []string{MetaModel + " is missing"}},
		{name: "zero block size", in: []Instance{replicaInstance("a", map[string]string{MetaBlockSize: "0"})}, skipped: []string{MetaBlockSize}},
		{name: "huge block size", in: []Instance{replicaInstance("a", map[string]string{MetaBlockSize: "100000"})}, skipped: []string{MetaBlockSize}},
		{name: "bad kv-events", in: []Instance{replicaInstance("a", map[string]string{MetaKVEvents: "yes"})}, skipped: []string{MetaKVEvents}},
		{name: "unknown role", in: []Instance{replicaInstance("a", map[string]string{MetaRole: "encoder"})}, skipped: []string{MetaRole}},
		{name: "bad max model len", in: []Instance{replicaInstance("a", map[string]string{MetaMaxModelLen: "0"})}, skipped: []string{MetaMaxModelLen}},
		{name: "zero data-parallel size", in: []Instance{replicaInstance("a", map[string]string{MetaDataParallelSize: "0"})}, skipped: []string{MetaDataParallelSize}},
		{name: "unknown task", in: []Instance{replicaInstance("a", map[string]string{MetaTask: "embedding"})}, skipped: []string{MetaTask}},
		{
			name:    "bad port",
			in:      []Instance{func() Instance { i := replicaInstance("a", nil); i.Port = 0; return i }()},
			skipped: []string{"port 0"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, skipped := ConvertReplicas(tc.in)
			if len(got) != 0 {
				t.Errorf("converted %+v; want it skipped", got)
			}
			checkSkipped(t, skipped, tc.skipped)
		})
	}
}

func withMeta(in Instance, k, v string) Instance {
	in.Meta[k] = v
	return in
}

func TestConvertRouters(t *testing.T) {
	t.Parallel()
	inst := func(id, port string) Instance {
		m := map[string]string{}
		if port != "-" {
			m[MetaIngestPort] = port
		}
		return Instance{ServiceID: id, Service: RouterService, Node: "n1", Address: "10.0.0.2", Port: 8080, Meta: m}
	}
	tests := []struct {
		name    string
		in      []Instance
		want    []Router
		skipped []string
	}{
		{
			name: "two routers sorted",
			in:   []Instance{inst("r2", "9001"), inst("r1", "9000")},
			want: []Router{
				{ID: "n1/r1", Address: "10.0.0.2", Port: 8080, IngestPort: 9000, Health: HealthPassing},
				{ID: "n1/r2", Address: "10.0.0.2", Port: 8080, IngestPort: 9001, Health: HealthPassing},
			},
		},
		{name: "missing ingest port", in: []Instance{inst("r1", "-")}, skipped: []string{MetaIngestPort + " is missing"}},
		{name: "bad ingest port", in: []Instance{inst("r1", "http")}, skipped: []string{MetaIngestPort}},
		{name: "ingest port out of range", in: []Instance{inst("r1", "70000")}, skipped: []string{MetaIngestPort}},
		{
			name: "admin port",
			in:   []Instance{withMeta(inst("r1", "9000"), MetaAdminPort, "9100")},
			want: []Router{{ID: "n1/r1", Address: "10.0.0.2", Port: 8080, IngestPort: 9000, AdminPort: 9100, Health: HealthPassing}},
		},
		{
			name: "bad admin port reads as none",
			in:   []Instance{withMeta(inst("r1", "9000"), MetaAdminPort, "0")},
			want: []Router{{ID: "n1/r1", Address: "10.0.0.2", Port: 8080, IngestPort: 9000, Health: HealthPassing}},
		},
		{
			name:    "bad one skipped",
			in:      []Instance{inst("r1", "9000"), inst("r2", "-1")},
			want:    []Router{{ID: "n1/r1", Address: "10.0.0.2", Port: 8080, IngestPort: 9000, Health: HealthPassing}},
			skipped: []string{"r2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, skipped := ConvertRouters(tc.in)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("routers (-want +got):\n%s", d)
			}
			checkSkipped(t, skipped, tc.skipped)
		})
	}
}

// TestConvertRegisteredRouters keeps routers whatever their health, each
// with it; ConvertRouters keeps only the passing one.
func TestConvertRegisteredRouters(t *testing.T) {
	t.Parallel()
	in := []Instance{
		{ServiceID: "r1", Node: "n1", Address: "10.0.0.2", Port: 8080, Meta: map[string]string{MetaIngestPort: "9000"}, Health: HealthCritical},
		{ServiceID: "r2", Node: "n1", Address: "10.0.0.2", Port: 8080, Meta: map[string]string{MetaIngestPort: "9001"}},
		{ServiceID: "r3", Node: "n1", Address: "10.0.0.2", Port: 8080, Meta: map[string]string{MetaIngestPort: "9002"}, Health: HealthWarning},
	}
	want := []Router{
		{ID: "n1/r1", Address: "10.0.0.2", Port: 8080, IngestPort: 9000, Health: HealthCritical},
		{ID: "n1/r2", Address: "10.0.0.2", Port: 8080, IngestPort: 9001, Health: HealthPassing},
		{ID: "n1/r3", Address: "10.0.0.2", Port: 8080, IngestPort: 9002, Health: HealthWarning},
	}
	got, skipped := ConvertRegisteredRouters(in)
	if d := cmp.Diff(want, got); d != "" || len(skipped) != 0 {
		t.Errorf("routers (-want +got):\n%s\nskipped %v", d, skipped)
	}
	if passing, _ := ConvertRouters(in); len(passing) != 1 || passing[0].ID != "n1/r2" {
		t.Errorf("ConvertRouters = %v; want only the passing n1/r2", passing)
	}
}

func checkSkipped(t *testing.T, got []error, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("skipped %v; want %d entries matching %q", got, len(want), want)
	}
	for i, err := range got {
		if !strings.Contains(err.Error(), want[i]) {
			t.Errorf("skipped[%d] = %q; want it to mention %q", i, err, want[i])
		}
	}
}

// FuzzConvertReplicas feeds arbitrary meta values through the converter: it
// must never panic, and every replica it returns must be valid.
func FuzzConvertReplicas(f *testing.F) {
	f.Add("a/b", "m", "16", "true", "", 8000)
	f.Add("", "", "-1", "maybe", "x", 0)
	f.Fuzz(func(t *testing.T, id, model, bs, ev, role string, port int) {
		in := Instance{ServiceID: "s", Node: "n", Address: "h", Port: port, Meta: map[string]string{
			MetaReplica: id, MetaModel: model, MetaBlockSize: bs, MetaKVEvents: ev, MetaRole: role,
		}}
		out, skipped := ConvertReplicas([]Instance{in})
		if len(out)+len(skipped) != 1 {
			t.Fatalf("got %d replicas and %d skipped for one instance", len(out), len(skipped))
		}
		for _, r := range out {
			if r.ID == "" || r.Model == "" || r.BlockSize <= 0 || r.Port <= 0 {
				t.Fatalf("invalid replica accepted: %+v", r)
			}
		}
		routers, rskipped := ConvertRouters([]Instance{{ServiceID: "s", Node: "n", Address: "h", Port: port, Meta: map[string]string{MetaIngestPort: bs}}})
		if len(routers)+len(rskipped) != 1 {
			t.Fatalf("got %d routers and %d skipped for one instance", len(routers), len(rskipped))
		}
	})
}
