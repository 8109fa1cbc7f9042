package broker

// DescribeTopicPartitions v0 (KIP-966): Metadata's topics and partitions,
// paged. Topics come sorted by name (all of them when the request names
// none); a page holds at most ResponsePartitionLimit partitions (capped
// at 2000, Kafka's max.request.partition.size.limit; at least 1) and ends with
// NextCursor, the topic and partition the next page starts from. A
// cursor naming a topic the request does not ask for is INVALID_REQUEST,
// as in Kafka. A topic needs Describe: one the principal may not describe
// is left out, or TOPIC_AUTHORIZATION_FAILED when named. The Java Admin's
// describeTopics (kafka-topics.sh --describe) asks this before Metadata.

import (
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/security"
)

// maxDescribePartitions is Kafka's max.request.partition.size.limit default.
const maxDescribePartitions = 2000

func (b *Broker) handleDescribeTopicPartitions(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	// A page holds one partition at least, as in Kafka (a limit of 0 is 1).
	limit := min(max(int(req.ResponsePartitionLimit), 1), maxDescribePartitions)

	var names []string
	if len(req.Topics) == 0 {
		for _, t := range b.meta.topicList() {
			names = append(names, t.name)
		}
	} else {
		for _, t := range req.Topics {
			names = append(names, t.Topic)
		}
		slices.Sort(names)
		names = slices.Compact(names)
	}
	first, cursorTopic := int32(0), ""
	if c := req.Cursor; c != nil {
		if len(req.Topics) > 0 && !slices.Contains(names, c.Topic) {
			for _, name := range names {
				rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				rt.Topic, rt.ErrorCode = kmsg.StringPtr(name), kerr.InvalidRequest.Code
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}
		i, _ := slices.BinarySearch(names, c.Topic)
		names = names[i:]
		if len(names) > 0 && names[0] == c.Topic {
			first, cursorTopic = max(c.Partition, 0), c.Topic
		}
	}
	// Topics the principal may not describe are left out of all topics,
	// and refused when named, after the page (without an id or
	// partitions, and so not counted in the page), as Kafka's
	// DescribeTopicPartitionsRequestHandler answers.
	var refused []kmsg.DescribeTopicPartitionsResponseTopic
	if b.authz != nil {
		names = keepIf(names, func(name string) bool {
			if b.allowed(r, security.OpDescribe, security.ResourceTopic, name) {
				return true
			}
			if len(req.Topics) > 0 {
				rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				rt.Topic, rt.ErrorCode = kmsg.StringPtr(name), kerr.TopicAuthorizationFailed.Code
				refused = append(refused, rt)
			}
			return false
		})
	}

	for _, name := range names {
		if limit == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			break
		}
		t := b.meta.topic(name)
		if t == nil {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.Topic = kmsg.StringPtr(name)
			rt.AuthorizedOperations = b.topicOps(r, rt.Topic)
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if validateTopicName(name) != nil {
				rt.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		mt := b.metadataTopic(t)
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic, rt.TopicID, rt.IsInternal = mt.Topic, mt.TopicID, mt.IsInternal
		rt.AuthorizedOperations = b.topicOps(r, &name)
		start := 0
		if name == cursorTopic {
			start = int(min(first, int32(len(mt.Partitions))))
		}
		for _, mp := range mt.Partitions[start:] {
			if limit == 0 {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: mp.Partition}
				break
			}
			limit--
			rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			rp.ErrorCode, rp.Partition, rp.LeaderID, rp.LeaderEpoch = mp.ErrorCode, mp.Partition, mp.Leader, mp.LeaderEpoch
			rp.Replicas, rp.ISR, rp.OfflineReplicas = mp.Replicas, mp.ISR, mp.OfflineReplicas
			rp.EligibleLeaderReplicas, rp.LastKnownELR = []int32{}, []int32{}
			if int(mp.Partition) < len(t.parts) {
				elr, lastKnown := t.parts[mp.Partition].ELR()
				rp.EligibleLeaderReplicas, rp.LastKnownELR = append(rp.EligibleLeaderReplicas, elr...), append(rp.LastKnownELR, lastKnown...)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		slices.SortFunc(rt.Partitions, func(a, b kmsg.DescribeTopicPartitionsResponseTopicPartition) int {
			return cmp.Compare(a.Partition, b.Partition)
		})
		resp.Topics = append(resp.Topics, rt)
		if resp.NextCursor != nil {
			break
		}
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp, nil
}
