package main

func saramaScenarios() goScenarios  { return goScenarios{} }
func kafkaGoScenarios() goScenarios { return goScenarios{} }
