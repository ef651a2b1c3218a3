package stripedouble

// executing says whether a request under key is still executing.
func (d *Double) executing(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.keys[key]
	return e != nil && e.executing
}
