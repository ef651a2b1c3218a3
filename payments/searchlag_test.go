package payments

// SearchLag is the default search lag, for the tests outside the package:
// a create read absent after a stored 500 is sent again under a new key
// only once its stored error was first seen this long ago.
const SearchLag = defaultSearchLag
