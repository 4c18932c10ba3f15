module github.com/tierfs/tierfs

go 1.26.0

require (
	github.com/apache/arrow-go/v18 v18.8.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
