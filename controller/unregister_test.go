package controller

import (
	"errors"
	"testing"
)

// A broker that stops stays registered, fenced, until UnregisterBroker
// removes it; a live one cannot be unregistered, an unknown one is not
// registered, and a broker that registers again is registered anew.
func TestUnregisterBroker(t *testing.T) {
	e := startEtcd(t)
	s1 := openStore(t, e, 1)
	s2 := openStore(t, e, 2)
	ctx := testCtx(t)
	if err := s1.RegisterBroker(ctx, BrokerInfo{ID: 1, Host: "h1", Port: 9092, Rack: "r1"}); err != nil {
		t.Fatal(err)
	}
	if err := s2.RegisterBroker(ctx, BrokerInfo{ID: 2, Host: "h2", Port: 9093}); err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	regs, err := s1.RegisteredBrokers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(regs) != 2 || regs[0].ID != 1 || regs[0].Fenced || regs[0].Rack != "r1" ||
		regs[1].ID != 2 || !regs[1].Fenced || regs[1].Host != "h2" || regs[1].Port != 9093 {
		t.Fatalf("registered brokers %+v, want 1 live and 2 fenced", regs)
	}
	if err := s1.UnregisterBroker(ctx, 1); !errors.Is(err, ErrBrokerLive) {
		t.Errorf("unregistering live broker 1: %v, want ErrBrokerLive", err)
	}
	if err := s1.UnregisterBroker(ctx, 7); !errors.Is(err, ErrBrokerNotRegistered) {
		t.Errorf("unregistering unknown broker 7: %v, want ErrBrokerNotRegistered", err)
	}
	if err := s1.UnregisterBroker(ctx, 2); err != nil {
		t.Fatalf("unregistering fenced broker 2: %v", err)
	}
	if err := s1.UnregisterBroker(ctx, 2); !errors.Is(err, ErrBrokerNotRegistered) {
		t.Errorf("unregistering broker 2 again: %v, want ErrBrokerNotRegistered", err)
	}
	if regs, err := s1.RegisteredBrokers(ctx); err != nil || len(regs) != 1 || regs[0].ID != 1 {
		t.Errorf("registered brokers after unregistering 2: %+v (%v)", regs, err)
	}
	s3 := openStore(t, e, 2)
	if err := s3.RegisterBroker(ctx, BrokerInfo{ID: 2, Host: "h2", Port: 9094}); err != nil {
		t.Fatal(err)
	}
	if regs, err := s1.RegisteredBrokers(ctx); err != nil || len(regs) != 2 || regs[1].Fenced || regs[1].Port != 9094 {
		t.Errorf("registered brokers after 2 came back: %+v (%v)", regs, err)
	}
}
