package main

func kafkaGoScenarios() goScenarios { return goScenarios{} }
