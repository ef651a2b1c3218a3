// Package auth is who a request acts for and what it may do: the principal
// an API token or staff sign-in stands for (its scopes and, for a token
// bound to one client, that client), put into the request's context by the
// HTTP layer and read by the layers below; and the limiter of failed
// sign-ins that keeps guessing slow.
package auth
