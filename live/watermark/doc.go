// Package watermark owns what makes a resume exact across instances:
// the watermarks of the instances (used by live's hub and sequencer).
package watermark
