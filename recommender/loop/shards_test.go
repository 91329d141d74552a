package loop

import (
	"fmt"
	"testing"

	"github.com/openvpa/openvpa/pkg/shards"
)

// fakeShards serves the shards the test sets.
type fakeShards struct {
	n               int
	owned, draining map[int]bool
	drained         map[int]bool
}

func (f *fakeShards) Of(key string) int { return shards.Of(key, f.n) }
func (f *fakeShards) Snapshot() shards.Snapshot {
	o, d := map[int]bool{}, map[int]bool{}
	for i := range f.owned {
		o[i] = true
	}
	for i := range f.draining {
		d[i] = true
	}
	return shards.Snapshot{Owned: o, Draining: d}
}
func (f *fakeShards) Valid(i int) bool { return f.owned[i] || f.draining[i] }
func (f *fakeShards) Drained(i int)    { f.drained[i] = true }

func TestShardsDivideAndHandOver(t *testing.T) {
	h := newHarness(t, nil)
	fs := &fakeShards{n: 2, owned: map[int]bool{0: true}, draining: map[int]bool{}, drained: map[int]bool{}}
	h.rec.deps.Shards = fs
	var mine, theirs []string
	for i := range 12 {
		name := fmt.Sprintf("web%d", i)
		h.addVPA("ns", name, name)
		h.addPod("ns", name+"-1", name, 100, 100*mi, "app")
		if shards.Of("ns/"+name, 2) == 0 {
			mine = append(mine, name)
		} else {
			theirs = append(theirs, name)
		}
	}
	if len(mine) == 0 || len(theirs) == 0 {
		t.Fatalf("the 12 VPAs all fall in one shard: %v %v", mine, theirs)
	}
	h.loops(3)
	for _, name := range mine {
		if h.vpa("ns", name).Status.Recommendation == nil {
			t.Errorf("%s (shard 0, served) has no recommendation", name)
		}
	}
	for _, name := range theirs {
		if v := h.vpa("ns", name); v.Status.Recommendation != nil || v.Status.Conditions != nil {
			t.Errorf("%s (shard 1, not served) was written: %+v", name, v.Status)
		}
	}

	// Shard 0 is given away: its checkpoints are written before the shard
	// is reported drained, and its VPAs are no longer served.
	before := h.count("patch", "verticalpodautoscalercheckpoints")
	fs.owned, fs.draining = map[int]bool{}, map[int]bool{0: true}
	h.loop()
	after := h.count("patch", "verticalpodautoscalercheckpoints")
	if !fs.drained[0] {
		t.Fatal("shard 0 not reported drained")
	}
	if after-before < len(mine) {
		t.Errorf("%d checkpoint writes while draining, want one per VPA of shard 0 (%d)", after-before, len(mine))
	}
	if n := len(h.rec.vpas); n != 0 {
		t.Errorf("%d VPAs still served after the shard left", n)
	}

	// Another replica gains shard 0: it restores the checkpoints first.
	other := h.newRecommender()
	other.deps.Shards = &fakeShards{n: 2, owned: map[int]bool{0: true}, draining: map[int]bool{}, drained: map[int]bool{}}
	h.rec = other
	h.loop()
	for _, name := range mine {
		st := other.vpas[podID("ns", name)]
		if st == nil || st.aggregates["app"] == nil || st.aggregates["app"].TotalSamplesCount < 3 {
			t.Errorf("%s: history not restored from its checkpoint on the new replica: %+v", name, st)
		}
	}
	cps := h.checkpoints()
	for _, cp := range cps {
		if shards.Of(cp.Namespace+"/"+cp.Spec.VPAObjectName, 2) != 0 {
			t.Errorf("checkpoint %s of a VPA in shard 1, which no replica served", cp.Name)
		}
	}
}
