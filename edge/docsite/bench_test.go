package docsite

import "testing"

// BenchmarkBuild is the cost of building the site, which the demo pays
// once it knows its address.
func BenchmarkBuild(b *testing.B) {
	for b.Loop() {
		if _, err := Build(Options{BasePath: "/docs"}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReference(b *testing.B) {
	bl := &builder{opts: Options{BasePath: "/docs"}, site: &Site{files: map[string]*file{}}}
	for b.Loop() {
		if err := bl.reference(); err != nil {
			b.Fatal(err)
		}
	}
}
