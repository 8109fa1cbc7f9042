package registry

import "testing"

// Avro's key order as Java's Schema.toJson writes it: a named type's and a
// field's other properties after the ranked ones, and aliases last of all
// (Confluent's normalized and resolved texts are that rendering).
func TestAvroKeyOrderAsJava(t *testing.T) {
	in := `{"aliases":["S"],"fields":[{"aliases":["b"],"custom":"p","default":1,"doc":"x","type":"int","name":"a"}],
		"custom":"q","doc":"d","namespace":"n","name":"R","type":"record"}`
	want := `{"type":"record","name":"R","namespace":"n","doc":"d","fields":[{"name":"a","type":"int","doc":"x","default":1,"custom":"p","aliases":["b"]}],"custom":"q","aliases":["S"]}`
	_, sorted, err := compactJSON(in)
	if err != nil {
		t.Fatal(err)
	}
	if sorted != want {
		t.Fatalf("ordered\n %s\nwant\n %s", sorted, want)
	}
}
