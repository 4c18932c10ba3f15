module github.com/tierfs/tierfs

go 1.26.0
