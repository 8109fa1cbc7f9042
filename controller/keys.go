package controller

import "strconv"

// Keys, relative to Store.root (<prefix>/<cluster-id>). See doc.go.
func (s *Store) brokerKey(id int32) string {
	return s.root + "/brokers/ids/" + strconv.Itoa(int(id))
}
func (s *Store) brokersPrefix() string            { return s.root + "/brokers/ids/" }
func (s *Store) topicsPrefix() string             { return s.root + "/brokers/topics/" }
func (s *Store) topicKey(t string) string         { return s.topicsPrefix() + t }
func (s *Store) topicPartsPrefix(t string) string { return s.topicKey(t) + "/partitions/" }
func (s *Store) stateKey(t string, p int32) string {
	return s.topicPartsPrefix(t) + strconv.Itoa(int(p)) + "/state"
}
func (s *Store) topicConfigsPrefix() string     { return s.root + "/config/topics/" }
func (s *Store) topicConfigKey(t string) string { return s.topicConfigsPrefix() + t }
func (s *Store) deleteMarkerKey(t string) string {
	return s.root + "/admin/delete_topics/" + t
}
func (s *Store) controllerPrefix() string   { return s.root + "/controller" }
func (s *Store) controllerEpochKey() string { return s.root + "/controller_epoch" }
func (s *Store) producerIDBlockKey() string { return s.root + "/latest_producer_id_block" }
