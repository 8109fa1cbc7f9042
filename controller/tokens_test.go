package controller

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// Delegation tokens: created once per id, read back by every store,
// changed and deleted under a revision condition, and swept once
// expired (a token renewed meanwhile stays).
func TestDelegationTokens(t *testing.T) {
	e := startEtcd(t)
	s1, s2 := openStore(t, e, 1), openStore(t, e, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tok := DelegationToken{TokenID: "tok-1", Owner: "User:alice", TokenRequester: "User:alice",
		Renewers: []string{"User:bob"}, IssueTimestamp: 1000, MaxTimestamp: 9000, ExpiryTimestamp: 5000}
	if err := s1.CreateDelegationToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if err := s2.CreateDelegationToken(ctx, tok); !errors.Is(err, ErrStale) {
		t.Errorf("creating the same id again: %v, want ErrStale", err)
	}
	got, found, err := s2.DelegationToken(ctx, "tok-1")
	if err != nil || !found || got.Owner != "User:alice" || !slices.Equal(got.Renewers, []string{"User:bob"}) || got.ExpiryTimestamp != 5000 {
		t.Fatalf("DelegationToken: %+v %v %v", got, found, err)
	}
	if _, found, err := s2.DelegationToken(ctx, "nope"); found || err != nil {
		t.Errorf("an unknown id: %v %v", found, err)
	}

	refused := errors.New("refused")
	if err := s2.UpdateDelegationToken(ctx, "tok-1", func(*DelegationToken) (*DelegationToken, error) { return nil, refused }); !errors.Is(err, refused) {
		t.Errorf("an update refused: %v", err)
	}
	if err := s2.UpdateDelegationToken(ctx, "tok-1", func(t *DelegationToken) (*DelegationToken, error) {
		t.ExpiryTimestamp = 8000
		return t, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s1.CreateDelegationToken(ctx, DelegationToken{TokenID: "tok-2", Owner: "User:bob", MaxTimestamp: 3000, ExpiryTimestamp: 3000}); err != nil {
		t.Fatal(err)
	}
	all, err := s1.DelegationTokens(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("DelegationTokens: %+v %v", all, err)
	}

	// At 6000 tok-2 is past its expiry, tok-1 (renewed to 8000) is not.
	removed, err := s1.RemoveExpiredDelegationTokens(ctx, 6000)
	if err != nil || len(removed) != 1 || removed[0].TokenID != "tok-2" {
		t.Fatalf("RemoveExpiredDelegationTokens: %+v %v", removed, err)
	}
	if !(DelegationToken{MaxTimestamp: 7000, ExpiryTimestamp: 8000}).Expired(7500) {
		t.Error("a token past its max lifetime is not expired")
	}
	if err := s2.UpdateDelegationToken(ctx, "tok-1", func(*DelegationToken) (*DelegationToken, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if all, err := s1.DelegationTokens(ctx); err != nil || len(all) != 0 {
		t.Errorf("after deleting tok-1: %+v %v", all, err)
	}
	var saw *DelegationToken
	if err := s1.UpdateDelegationToken(ctx, "tok-1", func(t *DelegationToken) (*DelegationToken, error) {
		saw = t
		return nil, refused
	}); !errors.Is(err, refused) || saw != nil {
		t.Errorf("updating a token gone: %v, saw %+v", err, saw)
	}
}
