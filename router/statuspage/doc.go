// Package statuspage renders the router's status page: one server-rendered
// HTML page on the admin listener (router/server mounts it at
// /admin/status, behind admin_token) that shows what the JSON admin
// endpoints and /metrics show, for a person rather than a scraper.
//
// Build turns what the router knows into a Page, the view model; the
// router's state comes in through the small interfaces defined here
// (Fleet, Router, Decisions), which router/server implements over the same
// parts the admin endpoints read (the replica set, the tracker, the index,
// the ingest sink, the peer table, the planner's decision log and
// metrics). Render executes the embedded html/template, which escapes
// every value and loads nothing from elsewhere: the CSS is inline, there
// is no script, and the optional auto-refresh is a meta refresh.
//
// It imports nothing outside the standard library, so it can be tested,
// and its escaping checked, without a router.
package statuspage
