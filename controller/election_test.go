package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/poll"
)

func TestCampaign(t *testing.T) {
	e := startEtcd(t)
	s1 := openStore(t, e, 1)
	s2 := openStore(t, e, 2)
	ctx := testCtx(t)

	if _, err := s1.Controller(ctx); !errors.Is(err, ErrNoController) {
		t.Fatalf("controller before any election: %v", err)
	}
	if s1.ControllerDone() != nil {
		t.Error("ControllerDone before winning")
	}
	epoch, err := s1.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if epoch != 1 {
		t.Errorf("first epoch %d", epoch)
	}
	if id, err := s2.Controller(ctx); err != nil || id != 1 {
		t.Errorf("controller %d %v", id, err)
	}
	if s1.ControllerDone() == nil {
		t.Error("no ControllerDone after winning")
	}
	// Topics created by the controller carry its epoch.
	mustCreate(t, s1, "t", [][]int32{{1}}, nil)
	if ce := mustTopic(t, s2, "t").Partitions[0].ControllerEpoch; ce != 1 {
		t.Errorf("state controller_epoch %d", ce)
	}

	// s2 waits while s1 leads.
	type result struct {
		epoch int32
		err   error
	}
	won := make(chan result, 1)
	go func() {
		ep, err := s2.Campaign(ctx)
		won <- result{ep, err}
	}()
	// s2 cannot win while s1 holds the election: probe with a short
	// campaign of a third store.
	s3 := openStore(t, e, 3)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if _, err := s3.Campaign(short); err == nil {
		t.Fatal("a second controller was elected")
	}
	cancel()
	select {
	case r := <-won:
		t.Fatalf("s2 elected while s1 leads: %+v", r)
	default:
	}

	// s1 goes away: s2 takes over with the next epoch.
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-won:
	case <-ctx.Done():
		t.Fatal("s2 never elected")
	}
	if r.err != nil || r.epoch != 2 {
		t.Fatalf("s2 campaign: %+v", r)
	}
	if id, err := s3.Controller(ctx); err != nil || id != 2 {
		t.Errorf("controller %d %v", id, err)
	}
	if ep, err := s3.ControllerEpoch(ctx); err != nil || ep != 2 {
		t.Errorf("controller epoch %d %v", ep, err)
	}

	// Resign hands over to the next candidate.
	if err := s2.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if s2.ControllerDone() != nil {
		t.Error("ControllerDone after resigning")
	}
	if ep, err := s3.Campaign(ctx); err != nil || ep != 3 {
		t.Errorf("s3 campaign: %d %v", ep, err)
	}
}

// Losing the lease ends the controllership: ControllerDone closes.
func TestControllerDoneOnLeaseLoss(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	other := openStore(t, e, 2)
	ctx := testCtx(t)
	if _, err := s.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	done := s.ControllerDone()
	sess, _ := s.session()
	if _, err := other.cli.Revoke(ctx, sess.Lease()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("ControllerDone did not close")
	}
	if _, err := other.Controller(ctx); !errors.Is(err, ErrNoController) {
		t.Errorf("controller after lease loss: %v", err)
	}
	// Once the store has a new lease it is no longer the controller, and
	// can win again with the next epoch.
	poll.Eventually(t, 10*time.Second, func() error {
		return errorIf(s.ControllerDone() != nil, "still the controller")
	})
	if ep, err := s.Campaign(ctx); err != nil || ep != 2 {
		t.Errorf("campaign after lease loss: %d %v", ep, err)
	}
}
