package elr

import (
	"slices"
	"testing"
)

func TestNext(t *testing.T) {
	unclean1 := func(r int32) bool { return r == 1 }
	for _, c := range []struct {
		name           string
		isr, elr, next []int32
		minISR         int
		unclean        func(int32) bool
		want           []int32
	}{
		{"at min ISR: empty", []int32{1, 2, 3}, nil, []int32{1, 2}, 2, nil, nil},
		{"back to min ISR: cleared", []int32{1}, []int32{2}, []int32{1, 3}, 2, nil, nil},
		{"below min ISR: the leaver joins", []int32{1, 2}, nil, []int32{1}, 2, nil, []int32{2}},
		{"ISR empty: all join", []int32{1}, []int32{2}, nil, 2, nil, []int32{1, 2}},
		{"unclean shutdown leaves", []int32{}, []int32{1, 2}, nil, 2, unclean1, []int32{2}},
		{"a rejoiner leaves the ELR", nil, []int32{1, 2}, []int32{2}, 2, nil, []int32{1}},
		{"min ISR 1, ISR empty", []int32{3}, nil, nil, 1, nil, []int32{3}},
	} {
		if got := Next(c.isr, c.elr, c.next, c.minISR, c.unclean); !slices.Equal(got, c.want) {
			t.Errorf("%s: Next(%v, %v, %v, %d) = %v, want %v", c.name, c.isr, c.elr, c.next, c.minISR, got, c.want)
		}
	}
}

func TestEffectiveMinISR(t *testing.T) {
	for _, c := range []struct{ min, rf, want int }{{2, 3, 2}, {2, 1, 1}, {0, 3, 1}, {3, 3, 3}, {5, 3, 3}} {
		if got := EffectiveMinISR(c.min, c.rf); got != c.want {
			t.Errorf("EffectiveMinISR(%d, %d) = %d, want %d", c.min, c.rf, got, c.want)
		}
	}
}
