// Command demo prints a greeting. It is the example workspace that agentd's
// bundled plans change: `make demo` runs one of them on a copy of it.
package main

import (
	"flag"
	"fmt"

	"example.com/demo/greet"
)

func main() {
	name := flag.String("name", "world", "who to greet")
	flag.Parse()
	fmt.Println(greet.Hello(*name))
}
