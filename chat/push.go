// This file owns a browser's Web Push subscription.

package chat

// PushSubscription is a browser's push subscription (the Push API's
// endpoint and keys, base64url).
type PushSubscription struct {
	Endpoint, P256dh, Auth string
}
