// Package files is attachments over HTTP: the composer's multipart
// upload, read as a stream (never ParseMultipartForm) and stored chunk by
// chunk as it arrives, each file posted as its own message; the download
// route for members of the conversation, with Range, ETag and headers that
// keep an uploaded file from ever running in our origin; and the sweeper
// of uploads whose process died.
package files
