package main

// Version must match "version" in config.json; version_test.go checks it.
const Version = "1.4.2"
