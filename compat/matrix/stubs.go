package main

func saramaScenarios() goScenarios  { return goScenarios{} }
func kafkaGoScenarios() goScenarios { return goScenarios{} }
func connectJob() job               { return goJob("Kafka Connect", func() goScenarios { return goScenarios{} }) }
