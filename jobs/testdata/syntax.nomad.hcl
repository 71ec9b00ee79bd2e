# an unterminated block
job "broken" {
  group "engine" {
