// Package docs holds the tests that keep the project's Markdown saying
// what is: docs/BENCHMARKS.md short, current and traceable (every table
// after a line naming its command, date, commit and conditions, no
// headings named after branches or rounds, a marker pair for every
// section a make target rewrites), dated notes named by their date and
// linked from where they matter, and a README that says what llmgw is
// before anything else.
//
// There is no code outside the tests.
package docs
