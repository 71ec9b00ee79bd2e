// Package listener opens the router's listeners and holds every connection
// to bounds a client on the open network cannot stretch: a cap on open
// connections, TLS whose certificate is read again when its files change,
// and an http.Server with header, body, per-write and idle deadlines and a
// cap on header size and count.
//
// The deadlines suit long streams: a request's body must arrive within
// BodyTimeout (a trickled body is cut off with 408), each write to the
// client must complete within WriteTimeout (a client that stops reading is
// dropped), but a response as a whole may last as long as its replica
// streams. http.Server's own ReadTimeout and WriteTimeout bound the whole
// request and so would end every long completion; they stay off.
//
// It also holds the Bearer check of the admin listener. It imports
// router/openai (for its error shape) and no other router package.
package listener
