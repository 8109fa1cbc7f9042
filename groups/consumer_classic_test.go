package groups

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
)

// A classic member's metadata survives the member metadata record's tag 0
// in the bytes Kafka 4.4 writes (ConsumerGroupMemberMetadataValue with
// ClassicMemberMetadata{SessionTimeoutMs: 7, SupportedProtocols: [{r, [9]}]},
// serialized by Kafka's generated class).
func TestClassicMemberMetadataTag(t *testing.T) {
	kafka := []byte{0x01, 0x00, 0x0c, 0x01, 0x00, 0x00, 0x00, 0x07, 0x02, 0x02, 0x72, 0x02, 0x09, 0x00, 0x00}
	ci := &classicInfo{session: 7 * time.Millisecond, protocols: []protocol{{"r", []byte{9}}}}
	if got := appendClassicTag(nil, ci); !bytes.Equal(got, kafka) {
		t.Errorf("appendClassicTag = % x, want Kafka's % x", got, kafka)
	}
	r := kbin.Reader{Src: kafka}
	back := readClassicTag(&r)
	if back == nil || back.session != ci.session || len(back.protocols) != 1 || back.protocols[0].name != "r" || !bytes.Equal(back.protocols[0].metadata, []byte{9}) {
		t.Errorf("readClassicTag = %+v", back)
	}
	r = kbin.Reader{Src: appendClassicTag(nil, nil)}
	if readClassicTag(&r) != nil {
		t.Error("a consumer-protocol member read back as classic")
	}
}
